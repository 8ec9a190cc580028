/* A cheap read of the checkout's current commit id, without loading the
 * VCS module: status uses it to tell whether its cached view of HEAD's
 * manifests is still current. It understands the common git layouts (a
 * .git directory or a worktree's .git file, loose refs, packed-refs, a
 * detached HEAD, a colocated jj workspace, whose git HEAD jj keeps at @-)
 * and answers TETHER_ERROR for anything else (a jj workspace without .git
 * beside .jj among them), so the caller falls back to the full VCS. Never
 * trust it for writing: it is a hint. */
#ifndef TETHER_VCS_PROBE_H
#define TETHER_VCS_PROBE_H

/* The commit id HEAD names, found from start_dir upward. TETHER_ENOTFOUND
 * on an unborn branch; TETHER_ERROR when the layout is not understood. */
int tt_vcs_probe_head(const char *start_dir, char id[41]);

#endif
