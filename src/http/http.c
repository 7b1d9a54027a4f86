/* http.c -- placeholder until the module lands. */
typedef int http__placeholder;
