/* placeholder */
typedef int kelvin_nvml_placeholder;
