/* fuzz/expo_openmetrics.c -- fuzz target for the OpenMetrics 1.0 parser,
 * with the same checks and writer round trip as the text target (whose body
 * it includes; see fuzz/expo_text.c). */
#include "expo/expo.h"

#define EXPO_FUZZ_FORMAT EXPO_FMT_OPENMETRICS
#include "expo_text.c"
