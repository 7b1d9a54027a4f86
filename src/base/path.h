/* path.h -- file paths as Go's path/filepath treats them on Unix, for the
 * places where Prometheus's exact path texts show (file names in messages,
 * rule files a test file names relative to itself).
 *
 * base_path_clean is filepath.Clean: the shortest equivalent path by
 * lexical processing only (no file system access): repeated separators
 * collapse, "." elements go, ".." removes the element before it (at the
 * root it is dropped; in a relative path with nothing left to remove it is
 * kept), trailing separators go; the empty path is ".".
 *
 * Ownership: the result is malloc'd; the caller frees it. NULL: no memory.
 */
#ifndef KELVIN_BASE_PATH_H
#define KELVIN_BASE_PATH_H

/* filepath.Clean(p). */
char *base_path_clean(const char *p);
/* filepath.Join(dir, name): "dir/name" cleaned (name alone if dir is ""). */
char *base_path_join(const char *dir, const char *name);

#endif
