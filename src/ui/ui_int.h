/* ui_int.h -- the UI module's generated asset table (written at build time
 * by src/ui/embed/ui_embed.c into gen/ui/ui_assets.c of the build directory). Sorted by
 * path (strcmp order) so lookups can bisect. */
#ifndef KELVIN_UI_UI_INT_H
#define KELVIN_UI_UI_INT_H

#include <stddef.h>

#include "ui/ui.h"

extern const ui_asset ui__assets[];
extern const size_t ui__n_assets;
extern const char ui__base[];

#endif
