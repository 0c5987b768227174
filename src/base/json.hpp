// Writing JSON strings (trace files, snapshots): a leaf every layer may use.
#pragma once

#include <cstdio>

namespace gpumem::detail::json {

// `s` as a quoted JSON string: quotes, backslashes and control characters
// escaped; other bytes as they are (names and symbols are UTF-8 or ASCII).
inline void write_string(FILE *f, const char *s)
{
    std::fputc('"', f);
    for (const unsigned char *p = reinterpret_cast<const unsigned char *>(s); p && *p; ++p) {
        switch (*p) {
        case '"': std::fputs("\\\"", f); break;
        case '\\': std::fputs("\\\\", f); break;
        case '\n': std::fputs("\\n", f); break;
        case '\t': std::fputs("\\t", f); break;
        case '\r': std::fputs("\\r", f); break;
        default:
            if (*p < 0x20)
                std::fprintf(f, "\\u%04x", *p);
            else
                std::fputc(*p, f);
        }
    }
    std::fputc('"', f);
}

} // namespace gpumem::detail::json
