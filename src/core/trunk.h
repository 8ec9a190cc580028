/* The trunk bookmark: the one that stands for every object's upstream
 * branch (the locator's `branch`, backends.md "Conventions"). On the trunk
 * objects work on that branch itself; every other bookmark forks
 * tether.ws.<dataset8>.<bookmark>. */
#ifndef TETHER_CORE_TRUNK_H
#define TETHER_CORE_TRUNK_H

#include "core/repo.h"

/* The trunk's name (borrowed from repo, settled once per handle):
 * `[new] trunk` in tether.toml, else the first of main, master and trunk
 * that is a live bookmark, else main. */
const char *tt_trunk(struct tether_repo *repo);
/* Is `bookmark` the trunk? NULL is not. */
int tt_is_trunk(struct tether_repo *repo, const char *bookmark);

#endif
