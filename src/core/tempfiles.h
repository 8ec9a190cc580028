/* Removing the temporary files killed processes left (see tempfiles.c). */
#ifndef TETHER_CORE_TEMPFILES_H
#define TETHER_CORE_TEMPFILES_H

/* Remove, under `dir` (recursively, never through a symbolic link), every
 * regular file named as tt_write_file_atomic's temporaries whose process
 * is gone. Best effort: what cannot be read or removed is left. Call it
 * holding the checkout lock. */
void tt_sweep_stale_temps(const char *dir);

#endif
