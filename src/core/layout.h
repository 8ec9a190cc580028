/* The layout version of a dataset's files: which shape tether.toml and
 * the manifests have, so that a tether meets a dataset a newer one wrote
 * with a refusal that says so, not with "unknown key".
 *
 *   layout 0: tether.toml and the manifests carry no version (every
 *             dataset written before layouts existed).
 *   layout 1: tether.toml says `layout = 1` in [dataset], and every
 *             manifest carries `layout = 1` at its top. Nothing else
 *             changed: the rest of each file is as layout 0 wrote it.
 *
 * tether.toml's layout is the dataset's: the files written from then on
 * (manifests by add, commit, repair) carry it, so a dataset stays of one
 * layout until `tether upgrade` moves it (docs/ARCHITECTURE.md, "Layout
 * versions"). Every layout up to TT_LAYOUT_CURRENT is read; a newer one
 * in tether.toml or in any manifest (working copy or history) is refused,
 * TETHER_EREFUSED, naming the file and both layouts. */
#ifndef TETHER_CORE_LAYOUT_H
#define TETHER_CORE_LAYOUT_H

#include <tether.h>

#include <jansson.h>

#define TT_LAYOUT_CURRENT TETHER_LAYOUT

/* tether.toml's [dataset] layout (0 when absent), checked: not a whole
 * number >= 0 is TETHER_ECONFIG, newer than TT_LAYOUT_CURRENT
 * TETHER_EREFUSED. `path` names the file in messages. */
int tt_layout_of_config(const json_t *config, const char *path, int *layout);
/* The same for a manifest's top-level `layout`. */
int tt_layout_of_manifest(const json_t *doc, const char *name, int *layout);

#endif
