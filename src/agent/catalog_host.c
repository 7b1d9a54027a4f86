/* catalog_host.c -- the host section of the metric catalog (see catalog.h).
 *
 * One entry per HOST_M_* (host_int.h), by designated initializer. Names,
 * types and HELP text are node_exporter 1.5's, byte for byte (checked
 * against Debian's prometheus-node-exporter 1.5.0 by
 * tests/compat/node_exporter.py), so dashboards such as "Node Exporter
 * Full" and existing alert rules work unchanged.
 *
 * Families whose names node_exporter generates from what the kernel offers
 * (node_memory_<field>, node_vmstat_<field>, node_netstat_<proto>_<field>,
 * node_sockstat_<proto>_<state>, node_hwmon_<type>_<element>_<unit>) are
 * listed here for the fields current kernels have; a field the list lacks
 * is still served, with a name and HELP generated the same way
 * (host_proc.c, host_sys.c), and shows up in the docs as a pattern entry.
 */
#include "agent/catalog.h"
#include "agent/host_int.h"

#define CPU_L "cpu,mode"
#define DEV_L "device"
#define FS_L  "device,fstype,mountpoint"
#define IB_L  "device,port"
#define HW_L  "chip,sensor"
#define STAT  "/proc/stat"

#define MEM_ENTRY(id, key, field)                                                                            \
    [HOST_M_MEM_##id] = {"node_memory_" key,                                                                 \
                         EXPO_GAUGE,                                                                         \
                         "bytes",                                                                            \
                         "Memory information field " key ".",                                                \
                         "",                                                                                 \
                         "/proc/meminfo " field " (kB x 1024)"},
#define MEM_COUNT_ENTRY(id, key, field)                                                                      \
    [HOST_M_MEM_##id] = {"node_memory_" key,    EXPO_GAUGE, "", "Memory information field " key ".", "",     \
                         "/proc/meminfo " field},
#define VM_ENTRY(f)                                                                                          \
    [HOST_M_VM_##f] = {"node_vmstat_" #f, EXPO_UNTYPED, "", "/proc/vmstat information field " #f ".", "",    \
                       "/proc/vmstat " #f},
#define NS_ENTRY(p, f)                                                                                       \
    [HOST_M_NS_##p##_##                                                                                      \
        f] = {"node_netstat_" #p "_" #f, EXPO_UNTYPED, "",                                                   \
              "Statistic " #p #f ".",    "",           "/proc/net/netstat, snmp, snmp6: " #p " " #f},
#define SS_ENTRY(p, s)                                                                                       \
    [HOST_M_SS_##p##_##s] = {                                                                                \
        "node_sockstat_" #p "_" #s,         EXPO_GAUGE, "", "Number of " #p " sockets in state " #s ".", "", \
        "/proc/net/sockstat{,6} " #p " " #s},
#define ND_ENTRY(f)                                                                                          \
    [HOST_M_NET_##f] = {"node_network_" #f "_total",                                                         \
                        EXPO_COUNTER,                                                                        \
                        "",                                                                                  \
                        "Network device statistic " #f ".",                                                  \
                        DEV_L,                                                                               \
                        "/proc/net/dev column " #f                                                           \
                        " (receive_nohandler: /sys/class/net/<dev>/statistics/rx_nohandler); lo excluded"},
#define NC_ENTRY(id, suffix, file, type)                                                                     \
    [HOST_M_NC_##id] = {"node_network_" suffix,      type, "", "Network device property: " suffix, DEV_L,    \
                        "/sys/class/net/<dev>/" file},
#define IB_ENTRY(id, suffix, help, file, ext, x4)                                                            \
    [HOST_M_IB_##id] = {"node_infiniband_" suffix,                                                           \
                        EXPO_COUNTER,                                                                        \
                        x4 ? "bytes" : "",                                                                   \
                        help,                                                                                \
                        IB_L,                                                                                \
                        ext ? "/sys/class/infiniband/<dev>/ports/<port>/counters_ext/" file                  \
                            : "/sys/class/infiniband/<dev>/ports/<port>/counters/" file},

const agent_metric agent__host_metrics[HOST_M__COUNT] = {
    /* ---- cpu ---- */
    [HOST_M_CPU_SECONDS] = {"node_cpu_seconds_total", EXPO_COUNTER, "seconds",
                            "Seconds the CPUs spent in each mode.", CPU_L,
                            STAT " cpuN lines / USER_HZ; never decreases (node_exporter's jump-back guard)"},
    [HOST_M_CPU_GUEST_SECONDS] = {"node_cpu_guest_seconds_total", EXPO_COUNTER, "seconds",
                                  "Seconds the CPUs spent in guests (VMs) for each mode.", CPU_L,
                                  STAT " guest (mode=user) and guest_nice (mode=nice)"},
    [HOST_M_CPU_CORE_THROTTLES] = {"node_cpu_core_throttles_total", EXPO_COUNTER, "",
                                   "Number of times this CPU core has been throttled.", "core,package",
                                   "/sys/devices/system/cpu/cpuN/thermal_throttle/core_throttle_count"},
    [HOST_M_CPU_PACKAGE_THROTTLES] = {"node_cpu_package_throttles_total", EXPO_COUNTER, "",
                                      "Number of times this CPU package has been throttled.", "package",
                                      "/sys/devices/system/cpu/cpuN/thermal_throttle/package_throttle_count"},
    [HOST_M_CPU_ISOLATED] =
        {"node_cpu_isolated", EXPO_GAUGE, "",
         "Whether each core is isolated, information from /sys/devices/system/cpu/isolated.", "cpu",
         "/sys/devices/system/cpu/isolated (read at start)"},
    /* ---- stat ---- */
    [HOST_M_BOOT_TIME] = {"node_boot_time_seconds", EXPO_GAUGE, "seconds", "Node boot time, in unixtime.", "",
                          STAT " btime"},
    [HOST_M_CONTEXT_SWITCHES] = {"node_context_switches_total", EXPO_COUNTER, "",
                                 "Total number of context switches.", "", STAT " ctxt"},
    [HOST_M_FORKS] = {"node_forks_total", EXPO_COUNTER, "", "Total number of forks.", "", STAT " processes"},
    [HOST_M_INTR] = {"node_intr_total", EXPO_COUNTER, "", "Total number of interrupts serviced.", "",
                     STAT " intr (first)"},
    [HOST_M_PROCS_RUNNING] = {"node_procs_running", EXPO_GAUGE, "", "Number of processes in runnable state.",
                              "", STAT " procs_running"},
    [HOST_M_PROCS_BLOCKED] = {"node_procs_blocked", EXPO_GAUGE, "",
                              "Number of processes blocked waiting for I/O to complete.", "",
                              STAT " procs_blocked"},
    /* ---- loadavg ---- */
    [HOST_M_LOAD1] = {"node_load1", EXPO_GAUGE, "", "1m load average.", "", "/proc/loadavg"},
    [HOST_M_LOAD5] = {"node_load5", EXPO_GAUGE, "", "5m load average.", "", "/proc/loadavg"},
    [HOST_M_LOAD15] = {"node_load15", EXPO_GAUGE, "", "15m load average.", "", "/proc/loadavg"},
    /* ---- pressure ---- */
    [HOST_M_PSI_CPU_WAITING] = {"node_pressure_cpu_waiting_seconds_total", EXPO_COUNTER, "seconds",
                                "Total time in seconds that processes have waited for CPU time", "",
                                "/proc/pressure/cpu some total (us)"},
    [HOST_M_PSI_IO_WAITING] = {"node_pressure_io_waiting_seconds_total", EXPO_COUNTER, "seconds",
                               "Total time in seconds that processes have waited due to IO congestion", "",
                               "/proc/pressure/io some total (us)"},
    [HOST_M_PSI_IO_STALLED] = {"node_pressure_io_stalled_seconds_total", EXPO_COUNTER, "seconds",
                               "Total time in seconds no process could make progress due to IO congestion",
                               "", "/proc/pressure/io full total (us)"},
    [HOST_M_PSI_MEM_WAITING] = {"node_pressure_memory_waiting_seconds_total", EXPO_COUNTER, "seconds",
                                "Total time in seconds that processes have waited for memory", "",
                                "/proc/pressure/memory some total (us)"},
    [HOST_M_PSI_MEM_STALLED] =
        {"node_pressure_memory_stalled_seconds_total", EXPO_COUNTER, "seconds",
         "Total time in seconds no process could make progress due to memory congestion", "",
         "/proc/pressure/memory full total (us)"},
    /* ---- meminfo, vmstat ---- */
    HOST_MEMINFO(MEM_ENTRY) HOST_MEMINFO_COUNTS(MEM_COUNT_ENTRY) HOST_VMSTAT(VM_ENTRY)
    /* ---- netdev ---- */
    HOST_NETDEV(ND_ENTRY)
        /* ---- netclass ---- */
        [HOST_M_NET_UP] = {"node_network_up", EXPO_GAUGE, "", "Value is 1 if operstate is 'up', 0 otherwise.",
                           DEV_L, "/sys/class/net/<dev>/operstate"},
    [HOST_M_NET_INFO] = {"node_network_info", EXPO_GAUGE, "",
                         "Non-numeric data from /sys/class/net/<iface>, value is always 1.",
                         "address,broadcast,device,duplex,ifalias,operstate",
                         "/sys/class/net/<dev>/{address,broadcast,duplex,ifalias,operstate}"},
    HOST_NETCLASS(NC_ENTRY)
        /* ---- diskstats ---- */
        [HOST_M_DISK_READS] = {"node_disk_reads_completed_total", EXPO_COUNTER, "",
                               "The total number of reads completed successfully.", DEV_L,
                               "/proc/diskstats field 4; devices matching "
                               "^(ram|loop|fd|(h|s|v|xv)d[a-z]|nvme\\d+n\\d+p)\\d+$ excluded"},
    [HOST_M_DISK_READS_MERGED] = {"node_disk_reads_merged_total", EXPO_COUNTER, "",
                                  "The total number of reads merged.", DEV_L, "/proc/diskstats field 5"},
    [HOST_M_DISK_READ_BYTES] = {"node_disk_read_bytes_total", EXPO_COUNTER, "bytes",
                                "The total number of bytes read successfully.", DEV_L,
                                "/proc/diskstats field 6 x 512"},
    [HOST_M_DISK_READ_TIME] = {"node_disk_read_time_seconds_total", EXPO_COUNTER, "seconds",
                               "The total number of seconds spent by all reads.", DEV_L,
                               "/proc/diskstats field 7 (ms)"},
    [HOST_M_DISK_WRITES] = {"node_disk_writes_completed_total", EXPO_COUNTER, "",
                            "The total number of writes completed successfully.", DEV_L,
                            "/proc/diskstats field 8"},
    [HOST_M_DISK_WRITES_MERGED] = {"node_disk_writes_merged_total", EXPO_COUNTER, "",
                                   "The number of writes merged.", DEV_L, "/proc/diskstats field 9"},
    [HOST_M_DISK_WRITTEN_BYTES] = {"node_disk_written_bytes_total", EXPO_COUNTER, "bytes",
                                   "The total number of bytes written successfully.", DEV_L,
                                   "/proc/diskstats field 10 x 512"},
    [HOST_M_DISK_WRITE_TIME] = {"node_disk_write_time_seconds_total", EXPO_COUNTER, "seconds",
                                "This is the total number of seconds spent by all writes.", DEV_L,
                                "/proc/diskstats field 11 (ms)"},
    [HOST_M_DISK_IO_NOW] = {"node_disk_io_now", EXPO_GAUGE, "", "The number of I/Os currently in progress.",
                            DEV_L, "/proc/diskstats field 12"},
    [HOST_M_DISK_IO_TIME] = {"node_disk_io_time_seconds_total", EXPO_COUNTER, "seconds",
                             "Total seconds spent doing I/Os.", DEV_L, "/proc/diskstats field 13 (ms)"},
    [HOST_M_DISK_IO_TIME_WEIGHTED] = {"node_disk_io_time_weighted_seconds_total", EXPO_COUNTER, "seconds",
                                      "The weighted # of seconds spent doing I/Os.", DEV_L,
                                      "/proc/diskstats field 14 (ms)"},
    [HOST_M_DISK_DISCARDS] = {"node_disk_discards_completed_total", EXPO_COUNTER, "",
                              "The total number of discards completed successfully.", DEV_L,
                              "/proc/diskstats field 15 (kernel 4.18+)"},
    [HOST_M_DISK_DISCARDS_MERGED] = {"node_disk_discards_merged_total", EXPO_COUNTER, "",
                                     "The total number of discards merged.", DEV_L,
                                     "/proc/diskstats field 16"},
    [HOST_M_DISK_DISCARDED_SECTORS] = {"node_disk_discarded_sectors_total", EXPO_COUNTER, "",
                                       "The total number of sectors discarded successfully.", DEV_L,
                                       "/proc/diskstats field 17"},
    [HOST_M_DISK_DISCARD_TIME] = {"node_disk_discard_time_seconds_total", EXPO_COUNTER, "seconds",
                                  "This is the total number of seconds spent by all discards.", DEV_L,
                                  "/proc/diskstats field 18 (ms)"},
    [HOST_M_DISK_FLUSHES] = {"node_disk_flush_requests_total", EXPO_COUNTER, "",
                             "The total number of flush requests completed successfully", DEV_L,
                             "/proc/diskstats field 19 (kernel 5.5+)"},
    [HOST_M_DISK_FLUSH_TIME] = {"node_disk_flush_requests_time_seconds_total", EXPO_COUNTER, "seconds",
                                "This is the total number of seconds spent by all flush requests.", DEV_L,
                                "/proc/diskstats field 20 (ms)"},
    [HOST_M_DISK_INFO] =
        {"node_disk_info", EXPO_GAUGE, "", "Info of /sys/block/<block_device>.",
         "device,major,minor,model,path,revision,serial,wwn",
         "/proc/diskstats, <rootfs>/run/udev/data/b<major>:<minor> (ID_MODEL, ID_PATH, ID_REVISION, "
         "ID_SERIAL_SHORT, ID_WWN)"},
    [HOST_M_DISK_FILESYSTEM_INFO] = {"node_disk_filesystem_info", EXPO_GAUGE, "",
                                     "Info about disk filesystem.", "device,type,usage,uuid,version",
                                     "udev ID_FS_TYPE, ID_FS_USAGE, ID_FS_UUID, ID_FS_VERSION"},
    [HOST_M_DISK_DEVICE_MAPPER_INFO] = {"node_disk_device_mapper_info", EXPO_GAUGE, "",
                                        "Info about disk device mapper.",
                                        "device,lv_layer,lv_name,name,uuid,vg_name",
                                        "udev DM_NAME, DM_UUID, DM_VG_NAME, DM_LV_NAME, DM_LV_LAYER"},
    [HOST_M_DISK_ATA_WRITE_CACHE] = {"node_disk_ata_write_cache", EXPO_GAUGE, "",
                                     "ATA disk has a write cache.", DEV_L, "udev ID_ATA_WRITE_CACHE"},
    [HOST_M_DISK_ATA_WRITE_CACHE_ENABLED] = {"node_disk_ata_write_cache_enabled", EXPO_GAUGE, "",
                                             "ATA disk has its write cache enabled.", DEV_L,
                                             "udev ID_ATA_WRITE_CACHE_ENABLED"},
    [HOST_M_DISK_ATA_ROTATION_RATE] = {"node_disk_ata_rotation_rate_rpm", EXPO_GAUGE, "",
                                       "ATA disk rotation rate in RPMs (0 for SSDs).", DEV_L,
                                       "udev ID_ATA_ROTATION_RATE_RPM"},
    /* ---- filesystem ---- */
    [HOST_M_FS_AVAIL] = {"node_filesystem_avail_bytes", EXPO_GAUGE, "bytes",
                         "Filesystem space available to non-root users in bytes.", FS_L,
                         "statfs f_bavail x f_bsize"},
    [HOST_M_FS_DEVICE_ERROR] = {"node_filesystem_device_error", EXPO_GAUGE, "",
                                "Whether an error occurred while getting statistics for the given device.",
                                FS_L,
                                "statfs failed, or has not returned within 1 s (then skipped until it does)"},
    [HOST_M_FS_FILES] = {"node_filesystem_files", EXPO_GAUGE, "", "Filesystem total file nodes.", FS_L,
                         "statfs f_files"},
    [HOST_M_FS_FILES_FREE] = {"node_filesystem_files_free", EXPO_GAUGE, "",
                              "Filesystem total free file nodes.", FS_L, "statfs f_ffree"},
    [HOST_M_FS_FREE] = {"node_filesystem_free_bytes", EXPO_GAUGE, "bytes", "Filesystem free space in bytes.",
                        FS_L, "statfs f_bfree x f_bsize"},
    [HOST_M_FS_READONLY] = {"node_filesystem_readonly", EXPO_GAUGE, "", "Filesystem read-only status.", FS_L,
                            "mount option ro in /proc/1/mounts"},
    [HOST_M_FS_SIZE] =
        {"node_filesystem_size_bytes", EXPO_GAUGE, "bytes", "Filesystem size in bytes.", FS_L,
         "statfs f_blocks x f_bsize; mounts from /proc/1/mounts (else /proc/mounts), node_exporter's "
         "default mount point and fs type exclusions"},
    /* ---- infiniband ---- */
    [HOST_M_IB_INFO] = {"node_infiniband_info", EXPO_GAUGE, "",
                        "Non-numeric data from /sys/class/infiniband/<device>, value is always 1.",
                        "board_id,device,firmware_version,hca_type",
                        "/sys/class/infiniband/<dev>/{board_id,fw_ver,hca_type}"},
    [HOST_M_IB_STATE] =
        {"node_infiniband_state_id", EXPO_GAUGE, "",
         "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)",
         IB_L, "/sys/class/infiniband/<dev>/ports/<port>/state"},
    [HOST_M_IB_PHYS_STATE] =
        {"node_infiniband_physical_state_id", EXPO_GAUGE, "",
         "Physical state of the InfiniBand port (0: no change, 1: sleep, 2: polling, 3: disable, 4: "
         "shift, 5: link up, 6: link error recover, 7: phytest)",
         IB_L, "/sys/class/infiniband/<dev>/ports/<port>/phys_state"},
    [HOST_M_IB_RATE] = {"node_infiniband_rate_bytes_per_second", EXPO_GAUGE, "bytes/s",
                        "Maximum signal transfer rate", IB_L,
                        "/sys/class/infiniband/<dev>/ports/<port>/rate (Gb/s x 125000000)"},
    HOST_IB_COUNTERS(IB_ENTRY)
        /* ---- hwmon ---- */
        [HOST_M_HWMON_CHIP_NAMES] = {"node_hwmon_chip_names", EXPO_GAUGE, "",
                                     "Annotation metric for human-readable chip names", "chip,chip_name",
                                     "/sys/class/hwmon/hwmonN/name"},
    [HOST_M_HWMON_SENSOR_LABEL] = {"node_hwmon_sensor_label", EXPO_GAUGE, "",
                                   "Label for given chip and sensor", "chip,label,sensor",
                                   "/sys/class/hwmon/hwmonN/<sensor>_label"},
    [HOST_M_HWMON_BEEP_ENABLED] = {"node_hwmon_beep_enabled", EXPO_GAUGE, "", "Hardware beep enabled", HW_L,
                                   "/sys/class/hwmon/hwmonN/beep_enable"},
    [HOST_M_HWMON_VRM] = {"node_hwmon_voltage_regulator_version", EXPO_GAUGE, "",
                          "Hardware voltage regulator", HW_L, "/sys/class/hwmon/hwmonN/vrm"},
    [HOST_M_HWMON_UPDATE_INTERVAL] = {"node_hwmon_update_interval_seconds", EXPO_GAUGE, "seconds",
                                      "Hardware monitor update interval", HW_L,
                                      "/sys/class/hwmon/hwmonN/update_interval (ms)"},
    [HOST_M_HWMON_TEMP] =
        {"node_hwmon_temp_celsius", EXPO_GAUGE, "C", "Hardware monitor for temperature (input)", HW_L,
         "/sys/class/hwmon/hwmonN/tempM_input (m°C); every node_hwmon_<type>_<element>_<unit> "
         "family is generated from the sensor files as node_exporter does"},
    [HOST_M_HWMON_TEMP_MAX] = {"node_hwmon_temp_max_celsius", EXPO_GAUGE, "C",
                               "Hardware monitor for temperature (max)", HW_L, "tempM_max"},
    [HOST_M_HWMON_TEMP_CRIT] = {"node_hwmon_temp_crit_celsius", EXPO_GAUGE, "C",
                                "Hardware monitor for temperature (crit)", HW_L, "tempM_crit"},
    [HOST_M_HWMON_TEMP_CRIT_ALARM] = {"node_hwmon_temp_crit_alarm_celsius", EXPO_GAUGE, "",
                                      "Hardware monitor for temperature (crit_alarm)", HW_L,
                                      "tempM_crit_alarm (0/1, "
                                      "node_exporter's name)"},
    [HOST_M_HWMON_TEMP_ALARM] = {"node_hwmon_temp_alarm", EXPO_GAUGE, "",
                                 "Hardware sensor alarm status (temp)", HW_L, "tempM_alarm"},
    [HOST_M_HWMON_TEMP_MIN] = {"node_hwmon_temp_min_celsius", EXPO_GAUGE, "C",
                               "Hardware monitor for temperature (min)", HW_L, "tempM_min"},
    [HOST_M_HWMON_FAN] = {"node_hwmon_fan_rpm", EXPO_GAUGE, "rpm",
                          "Hardware monitor for fan revolutions per minute (input)", HW_L, "fanM_input"},
    [HOST_M_HWMON_FAN_MIN] = {"node_hwmon_fan_min_rpm", EXPO_GAUGE, "rpm",
                              "Hardware monitor for fan revolutions per minute (min)", HW_L, "fanM_min"},
    [HOST_M_HWMON_FAN_ALARM] = {"node_hwmon_fan_alarm", EXPO_GAUGE, "", "Hardware sensor alarm status (fan)",
                                HW_L, "fanM_alarm"},
    [HOST_M_HWMON_IN] = {"node_hwmon_in_volts", EXPO_GAUGE, "V", "Hardware monitor for voltage (input)", HW_L,
                         "inM_input (mV)"},
    [HOST_M_HWMON_IN_MIN] = {"node_hwmon_in_min_volts", EXPO_GAUGE, "V", "Hardware monitor for voltage (min)",
                             HW_L, "inM_min (mV)"},
    [HOST_M_HWMON_IN_MAX] = {"node_hwmon_in_max_volts", EXPO_GAUGE, "V", "Hardware monitor for voltage (max)",
                             HW_L, "inM_max (mV)"},
    [HOST_M_HWMON_IN_ALARM] = {"node_hwmon_in_alarm", EXPO_GAUGE, "", "Hardware sensor alarm status (in)",
                               HW_L, "inM_alarm"},
    [HOST_M_HWMON_CURR] = {"node_hwmon_curr_amps", EXPO_GAUGE, "A", "Hardware monitor for current (input)",
                           HW_L, "currM_input (mA)"},
    [HOST_M_HWMON_POWER_AVERAGE] = {"node_hwmon_power_average_watt", EXPO_GAUGE, "W",
                                    "Hardware monitor for power usage in watts (average)", HW_L,
                                    "powerM_average (uW)"},
    [HOST_M_HWMON_POWER_INPUT] = {"node_hwmon_power_input_watt", EXPO_GAUGE, "W",
                                  "Hardware monitor for power usage in watts (input)", HW_L,
                                  "powerM_input (uW)"},
    [HOST_M_HWMON_POWER_CAP] = {"node_hwmon_power_cap_watt", EXPO_GAUGE, "W",
                                "Hardware monitor for power usage in watts (cap)", HW_L, "powerM_cap (uW)"},
    [HOST_M_HWMON_POWER_ACCURACY] = {"node_hwmon_power_accuracy", EXPO_GAUGE, "ratio",
                                     "Hardware monitor power meter accuracy, as a ratio", HW_L,
                                     "powerM_accuracy"},
    [HOST_M_HWMON_POWER_AVERAGE_INTERVAL] =
        {"node_hwmon_power_average_interval_seconds", EXPO_GAUGE, "seconds",
         "Hardware monitor power usage update interval (average_interval)", HW_L,
         "powerM_average_interval (ms)"},
    [HOST_M_HWMON_ENERGY] = {"node_hwmon_energy_joule_total", EXPO_COUNTER, "J",
                             "Hardware monitor for joules used so far (input)", HW_L, "energyM_input (uJ)"},
    [HOST_M_HWMON_PWM] = {"node_hwmon_pwm", EXPO_GAUGE, "", "Hardware monitor pwm element ", HW_L, "pwmM"},
    [HOST_M_HWMON_HUMIDITY] =
        {"node_hwmon_humidity", EXPO_GAUGE, "ratio",
         "Hardware monitor for humidity, as a ratio (multiply with 100.0 to get the humidity as a "
         "percentage) (input)",
         HW_L, "humidityM_input"},
    /* ---- netstat, sockstat ---- */
    HOST_NETSTAT(NS_ENTRY)[HOST_M_SOCK_USED] = {"node_sockstat_sockets_used", EXPO_GAUGE, "",
                                                "Number of IPv4 sockets in use.", "",
                                                "/proc/net/sockstat sockets used"},
    HOST_SOCKSTAT(SS_ENTRY)
        /* ---- entropy, filefd, uname, time ---- */
        [HOST_M_ENTROPY_AVAIL] = {"node_entropy_available_bits", EXPO_GAUGE, "bits",
                                  "Bits of available entropy.", "", "/proc/sys/kernel/random/entropy_avail"},
    [HOST_M_ENTROPY_POOL] = {"node_entropy_pool_size_bits", EXPO_GAUGE, "bits", "Bits of entropy pool.", "",
                             "/proc/sys/kernel/random/poolsize"},
    [HOST_M_FILEFD_ALLOCATED] = {"node_filefd_allocated", EXPO_GAUGE, "",
                                 "File descriptor statistics: allocated.", "",
                                 "/proc/sys/fs/file-nr (first)"},
    [HOST_M_FILEFD_MAXIMUM] = {"node_filefd_maximum", EXPO_GAUGE, "", "File descriptor statistics: maximum.",
                               "", "/proc/sys/fs/file-nr (third)"},
    [HOST_M_UNAME_INFO] = {"node_uname_info", EXPO_GAUGE, "",
                           "Labeled system information as provided by the uname system call.",
                           "domainname,machine,nodename,release,sysname,version", "uname(2)"},
    [HOST_M_TIME_SECONDS] = {"node_time_seconds", EXPO_GAUGE, "seconds",
                             "System time in seconds since epoch (1970).", "",
                             "clock_gettime(CLOCK_REALTIME)"},
    [HOST_M_TIME_ZONE_OFFSET] = {"node_time_zone_offset_seconds", EXPO_GAUGE, "seconds",
                                 "System time zone offset in seconds.", "time_zone",
                                 "localtime_r tm_gmtoff, tm_zone"},
    [HOST_M_CLOCKSOURCE_AVAILABLE] = {"node_time_clocksource_available_info", EXPO_GAUGE, "",
                                      "Available clocksources read from '/sys/devices/system/clocksource'.",
                                      "clocksource,device",
                                      "/sys/devices/system/clocksource/clocksourceN/available_clocksource"},
    [HOST_M_CLOCKSOURCE_CURRENT] = {"node_time_clocksource_current_info", EXPO_GAUGE, "",
                                    "Current clocksource read from '/sys/devices/system/clocksource'.",
                                    "clocksource,device",
                                    "/sys/devices/system/clocksource/clocksourceN/current_clocksource"},
};

const agent_catalog_section agent_catalog_host = {
    .title = "Host: node_exporter's metrics",
    .collector = "host",
    .entity_labels = "",
    .intro =
        "The node_* families of node_exporter 1.5 for the collectors that matter on GPU nodes (cpu, meminfo, "
        "loadavg, pressure, stat, vmstat, netdev, netclass, diskstats, filesystem, infiniband, hwmon, uname, "
        "time, entropy, filefd, sockstat, netstat), with node_exporter's names, types, HELP text, labels and "
        "default exclusions, read from --path.procfs, --path.sysfs and --path.rootfs. Families generated "
        "from "
        "what the kernel offers (node_memory_*, node_vmstat_*, node_netstat_*, node_sockstat_*, "
        "node_hwmon_*) "
        "are listed for current kernels; other fields are served with names generated the same way.",
    .metrics = agent__host_metrics,
    .count = HOST_M__COUNT,
};
