/* sim.c -- placeholder until the module lands. */
typedef int sim__placeholder;
