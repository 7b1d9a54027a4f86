/* pb.c -- placeholder so the remote module builds before its first real
 * file lands; replaced by wire.c. */
#include "remote/prompb.pb-c.h" /* build/gen/remote */
