! The pool loop with statistics (seeds: pool_loop, pool_stats).
! SPDX-License-Identifier: MIT
program test_pool
  use gpumem
  use test_support
  implicit none
  integer(c_size_t), parameter :: mib = 1048576
  integer, parameter :: iterations = 100
  type(c_ptr) :: stream, pool, own, p, held(4), pinned, again
  integer(c_int8_t), pointer :: bytes(:)
  type(gpumem_stats_t) :: before, after
  type(gpumem_pool_props_t) :: props
  type(gpumem_pointer_info_t) :: info
  integer(c_int64_t), target :: val
  integer(c_int32_t) :: st
  integer :: i

  call check(gpumem_stream_create(stream), 'stream create')
  call check(gpumem_device_get_default_pool(pool, 0), 'default pool')
  val = huge(val) ! keep what the pool holds across synchronisations
  call check(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, c_loc(val)), 'set threshold')

  before = gpumem_stats_init()
  call check(gpumem_get_stats(before), 'stats')
  do i = 1, iterations
    call check(gpumem_malloc_async(p, mib, stream), 'gpumem_malloc_async')
    call check(gpumem_memset_async(p, i, mib, stream), 'memset_async')
    call check(gpumem_free_async(p, stream), 'gpumem_free_async')
  end do
  call check(gpumem_stream_synchronize(stream), 'synchronize')
  after = gpumem_stats_init()
  call check(gpumem_get_stats(after), 'stats')
  print '(a,i0,a,i0)', 'stream-ordered allocations: ', &
    after%alloc_count(GPUMEM_KIND_STREAM_ORDERED) - before%alloc_count(GPUMEM_KIND_STREAM_ORDERED), &
    ', frees: ', after%free_count(GPUMEM_KIND_STREAM_ORDERED) - before%free_count(GPUMEM_KIND_STREAM_ORDERED)
  if (after%alloc_count(GPUMEM_KIND_STREAM_ORDERED) - before%alloc_count(GPUMEM_KIND_STREAM_ORDERED) /= iterations) &
    call fail('alloc_count did not grow by the loop count')
  if (after%free_count(GPUMEM_KIND_STREAM_ORDERED) - before%free_count(GPUMEM_KIND_STREAM_ORDERED) /= iterations) &
    call fail('free_count did not grow by the loop count')
  if (after%current_bytes(GPUMEM_KIND_STREAM_ORDERED) /= 0) call fail('stream-ordered bytes still live')
  if (after%peak_bytes(GPUMEM_KIND_STREAM_ORDERED) < int(mib, c_int64_t)) call fail('peak below one allocation')

  call check(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, c_loc(val)), 'reserved')
  print '(a,i0)', 'pool reserved bytes: ', val
  if (val < int(mib, c_int64_t)) call fail('the pool keeps less than one allocation')
  if (val > 8 * int(mib, c_int64_t)) call fail('the loop did not reuse memory')
  call check(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, c_loc(val)), 'used')
  if (val /= 0) call fail('used memory after freeing everything')
  call check(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, c_loc(val)), 'used high')
  if (val < int(mib, c_int64_t)) call fail('used high below one allocation')

  ! four at once: used memory counts them all
  do i = 1, 4
    call check(gpumem_malloc_async(held(i), mib, stream), 'malloc_async held')
  end do
  call check(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_CURRENT, c_loc(val)), 'used')
  print '(a,i0)', 'pool used bytes with four held: ', val
  if (val < 4 * int(mib, c_int64_t)) call fail('used memory below four allocations')
  do i = 1, 4
    call check(gpumem_free_async(held(i), stream), 'free_async held')
  end do
  call check(gpumem_stream_synchronize(stream), 'synchronize')

  ! reset the high-water mark, give the memory back
  val = 0
  call check(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, c_loc(val)), 'reset used high')
  call check(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_USED_MEM_HIGH, c_loc(val)), 'used high')
  if (val /= 0) call fail('used high not reset to the current value')
  val = 0
  call check(gpumem_pool_set_attribute(pool, GPUMEM_POOL_ATTR_RELEASE_THRESHOLD, c_loc(val)), 'threshold 0')
  call check(gpumem_pool_trim_to(pool, 0_c_size_t), 'trim')
  call check(gpumem_pool_get_attribute(pool, GPUMEM_POOL_ATTR_RESERVED_MEM_CURRENT, c_loc(val)), 'reserved')
  print '(a,i0)', 'pool reserved bytes after trim: ', val
  if (val /= 0) call fail('trim_to(0) kept memory')

  ! a pool of its own
  props = gpumem_pool_props_init()
  props%implementation = GPUMEM_POOL_BUILTIN
  call check(gpumem_pool_create(own, props), 'pool create')
  call check(gpumem_malloc_from_pool_async(p, 4096_c_size_t, own, stream), 'malloc_from_pool_async')
  info = gpumem_pointer_info_init()
  call check(gpumem_pointer_get_info(p, info), 'pointer info')
  if (info%kind /= GPUMEM_KIND_STREAM_ORDERED) call fail('kind is not STREAM_ORDERED')
  if (.not. c_associated(info%pool, own)) call fail('pointer info names another pool')
  call check(gpumem_free_async(p, stream), 'free_async')
  call check(gpumem_pool_destroy(own), 'pool destroy')
  st = gpumem_pool_destroy(own)
  if (st /= GPUMEM_ERROR_INVALID_HANDLE) call fail('destroyed pool still accepted')

  ! 0.2: a pool of pinned host memory, the process's default one for any NUMA node
  call check(gpumem_get_default_pool_for(pinned, GPUMEM_POOL_MEMORY_PINNED, -1_c_int32_t), 'default pinned pool')
  call check(gpumem_get_default_pool_for(again, GPUMEM_POOL_MEMORY_PINNED, -1_c_int32_t), 'default pinned pool')
  if (.not. c_associated(pinned, again)) call fail('two default pinned pools')
  call check(gpumem_malloc_from_pool_async(p, 4096_c_size_t, pinned, stream), 'malloc from the pinned pool')
  call check(gpumem_stream_synchronize(stream), 'synchronize')
  call c_f_pointer(p, bytes, [4096])
  bytes(1) = 42_c_int8_t ! host memory: the CPU writes it
  bytes(4096) = 43_c_int8_t
  info = gpumem_pointer_info_init()
  call check(gpumem_pointer_get_info(p, info), 'pointer info')
  if (info%memory /= GPUMEM_POOL_MEMORY_PINNED) call fail('pointer info memory is not PINNED')
  if (.not. c_associated(info%pool, pinned)) call fail('pointer info names another pool')
  call check(gpumem_free_async(p, stream), 'free_async pinned')
  st = gpumem_pool_destroy(pinned)
  if (st /= GPUMEM_ERROR_INVALID_VALUE) call fail('a default pool was destroyed')
  props = gpumem_pool_props_init()
  props%memory = GPUMEM_POOL_MEMORY_MANAGED
  props%numa_node = 0
  st = gpumem_pool_create(own, props)
  if (st /= GPUMEM_ERROR_INVALID_VALUE) call fail('numa_node accepted for a managed pool')

  call check(gpumem_stream_destroy(stream), 'stream destroy')
  print '(a)', 'fortran pool: OK'
end program test_pool
