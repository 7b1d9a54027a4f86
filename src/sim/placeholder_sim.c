/* placeholder */
typedef int kelvin_sim_placeholder;
