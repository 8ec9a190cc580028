/* The engine's side of the versioned plug-in structs (docs/BACKENDS.md,
 * "Versions and sizes").
 *
 * A struct a plug-in fills begins with `uint32_t version, size`. The engine
 * checks both once, where the struct comes in (a module loaded, a backend
 * registered, an API call's options), and then reads a member that a
 * shorter struct may lack only through an accessor: the member when it lies
 * inside the plug-in's size, else 0 (NULL), which every optional member
 * already means "absent". The accessors are one macro over offsetof, so a
 * member appended tomorrow needs no code here. */
#ifndef TETHER_CORE_ABI_H
#define TETHER_CORE_ABI_H

#include <tether/backend.h>

#include <stddef.h>
#include <stdint.h>

/* Member m of *p, or 0 when p's size ends before it. */
#define TT_STRUCT_GET(type, p, m) (TETHER_STRUCT_HAS(type, (p), m) ? (p)->m : 0)
/* The same for a backend, which is what the engine reads most. */
#define TT_BACKEND_GET(b, m) TT_STRUCT_GET(struct tether_backend, (b), m)

/* The size of the first layout that carried a size, for each struct: no
 * struct of a version the engine reads is shorter. Fixed by the last member
 * of that layout, so appending members leaves them as they are. */
#define TT_SIZE_THROUGH(type, m) (offsetof(type, m) + sizeof(((type *)0)->m))
#define TT_BACKEND_V4_SIZE TT_SIZE_THROUGH(struct tether_backend, diff_streams)
#define TT_MODULE_V1_SIZE TT_SIZE_THROUGH(struct tether_module, shutdown)

/* Can the engine read a struct of `version` and `size`, of which it knows
 * versions oldest..newest, the oldest `min_size` bytes long and today's
 * `max_size`? 0, or TETHER_ERROR with a one-line message naming the struct
 * (`what`, e.g. "backend 'dirsnap' (struct tether_backend)"), where it came
 * from (`origin`, a module's file, or NULL), its version and the engine's. */
int tt_abi_check(const char *what, const char *origin, uint32_t version, uint32_t size, uint32_t oldest,
                 uint32_t newest, size_t min_size, size_t max_size);

/* An option struct handed to the public API: copy it into `out` (today's
 * full struct, `out_size` bytes), with the members past the caller's size
 * zero, so the rest of the engine reads every member as it is. A NULL
 * `in` gives all zeros. TETHER_EUSAGE, naming `what` and both versions,
 * when the caller's struct is not one this tether reads (an uninitialised
 * version, say: begin it with TETHER_<NAME>_INIT). */
int tt_abi_copy_opts(const char *what, const void *in, uint32_t newest, void *out, size_t out_size);
#define TT_OPTS_IN(what, ver, in, out) tt_abi_copy_opts(what, in, ver, out, sizeof *(out))

/* The registration of a backend whose struct is version 3, the layout from
 * before version and size (tests/abi/v3/include/tether/backend.h): an
 * engine-owned struct of today's layout whose functions call the old ones
 * with the old layouts of tether_bctx, tether_fingerprint,
 * tether_verify_item and tether_listing_source. The same old struct gives
 * the same adapter. NULL, with the error set, when all the adapters are in
 * use. (abi_v3.c) */
const struct tether_backend *tt_abi_v3_adapt(const void *old, const char *origin);

#endif
