/* placeholder */
typedef int kelvin_http_placeholder;
