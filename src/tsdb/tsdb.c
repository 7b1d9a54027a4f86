/* tsdb.c -- placeholder until the module lands. */
typedef int tsdb__placeholder;
