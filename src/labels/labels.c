/* labels.c -- placeholder until the module lands. */
typedef int labels__placeholder;
