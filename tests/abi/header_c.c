/* The public header on its own, as strict C99 (and C11): every *_INIT macro, every typedef.
 * Built with -std=c99 -pedantic -Werror -Wall -Wextra.  SPDX-License-Identifier: MIT */
#include <gpumem/gpumem.h>

static void on_trace(const gpumem_trace_event_t *event, void *user)
{
    (void)event;
    (void)user;
}

int main(void)
{
    gpumem_device_info_t di = GPUMEM_DEVICE_INFO_INIT;
    gpumem_pointer_info_t pi = GPUMEM_POINTER_INFO_INIT;
    gpumem_stats_t st = GPUMEM_STATS_INIT;
    gpumem_pool_props_t pp = GPUMEM_POOL_PROPS_INIT;
    gpumem_alloc_props_t ap = GPUMEM_ALLOC_PROPS_INIT;
    gpumem_oom_report_t oom = GPUMEM_OOM_REPORT_INIT;
    gpumem_access_desc_t ad = {0, GPUMEM_ACCESS_READWRITE};
    gpumem_pool_ptr_export_data_t ed = {{0}};
    gpumem_trace_fn fn = on_trace;
    gpumem_stream_t s = NULL;
    gpumem_event_t e = NULL;
    gpumem_pool_t p = NULL;
    gpumem_buffer_t b = NULL;
    gpumem_mem_handle_t h = 0;
    gpumem_status_t status = GPUMEM_SUCCESS;
    gpumem_status_t (*init)(int32_t) = gpumem_init;
    int ok = di.size == sizeof di && pi.size == sizeof pi && st.size == sizeof st && pp.size == sizeof pp &&
             ap.size == sizeof ap && oom.size == sizeof oom && oom.has_report == 0 && oom.pool == NULL && di.name[0] == 0 && pi.kind == 0 && st.fallback_count == 0 && pp.max_size == 0 &&
             ap.device == 0 && ad.flags == 3 && ed.reserved[63] == 0 && fn != NULL && s == NULL && e == NULL &&
             p == NULL && b == NULL && h == 0 && status == 0 && init != NULL &&
             GPUMEM_VERSION == GPUMEM_VERSION_MAJOR * 10000 + GPUMEM_VERSION_MINOR * 100 + GPUMEM_VERSION_PATCH;
    return ok ? 0 : 1;
}
