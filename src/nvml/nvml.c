/* nvml.c -- placeholder until the module lands. */
typedef int nvml__placeholder;
