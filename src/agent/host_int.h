/* host_int.h -- internals shared by the host collector's files (host*.c)
 * and its catalog section (catalog_host.c). Not a public interface.
 *
 * Layout of the collector:
 *   host.c        lifecycle, descriptor cache, directory listings, label and
 *                 family helpers, the cycle, and the small pieces (loadavg,
 *                 pressure, entropy, filefd, uname, time);
 *   host_proc.c   the /proc text formats: stat (cpu + stat), meminfo,
 *                 vmstat, netstat/snmp/snmp6, sockstat, net/dev, diskstats
 *                 (+ udev properties), each as a parser over a buffer so the
 *                 fuzz target can drive it;
 *   host_sys.c    the /sys device tables: netclass, infiniband, hwmon, CPU
 *                 thermal throttles, isolated CPUs, clocksources;
 *   host_fs.c     mount table and statfs on a helper thread.
 *
 * Every metric family either has a HOST_M_* entry (fixed name) or is
 * generated (node_memory_<field>, node_hwmon_<type>_<element>_<unit>, ...);
 * generated names are looked up in the catalog first so that known ones
 * share its static strings.
 */
#ifndef KELVIN_AGENT_HOST_INT_H
#define KELVIN_AGENT_HOST_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/catalog.h"
#include "agent/host.h"
#include "base/buf.h"
#include "base/str.h"
#include "expo/expo.h"

/* ---- catalog index ---------------------------------------------------- */

/* /proc/meminfo fields node_exporter turns into node_memory_<key>; X(id,
 * key as exported, field as in the file). HOST_MEMINFO: values in kB
 * (exported x 1024 as _bytes); HOST_MEMINFO_COUNTS: plain numbers. */
/* The X-macro tables below keep one entry a line; clang-format would join them. */
// clang-format off
#define HOST_MEMINFO_COUNTS(X)                                                                     \
    X(HugePages_Total, "HugePages_Total", "HugePages_Total")                                       \
    X(HugePages_Free, "HugePages_Free", "HugePages_Free")                                          \
    X(HugePages_Rsvd, "HugePages_Rsvd", "HugePages_Rsvd")                                          \
    X(HugePages_Surp, "HugePages_Surp", "HugePages_Surp")

#define HOST_MEMINFO(X)                                                                            \
    X(MemTotal, "MemTotal_bytes", "MemTotal") X(MemFree, "MemFree_bytes", "MemFree")               \
    X(MemAvailable, "MemAvailable_bytes", "MemAvailable") X(Buffers, "Buffers_bytes", "Buffers")   \
    X(Cached, "Cached_bytes", "Cached") X(SwapCached, "SwapCached_bytes", "SwapCached")            \
    X(Active, "Active_bytes", "Active") X(Inactive, "Inactive_bytes", "Inactive")                  \
    X(Active_anon, "Active_anon_bytes", "Active(anon)")                                            \
    X(Inactive_anon, "Inactive_anon_bytes", "Inactive(anon)")                                      \
    X(Active_file, "Active_file_bytes", "Active(file)")                                            \
    X(Inactive_file, "Inactive_file_bytes", "Inactive(file)")                                      \
    X(Unevictable, "Unevictable_bytes", "Unevictable") X(Mlocked, "Mlocked_bytes", "Mlocked")      \
    X(SwapTotal, "SwapTotal_bytes", "SwapTotal") X(SwapFree, "SwapFree_bytes", "SwapFree")         \
    X(Zswap, "Zswap_bytes", "Zswap") X(Zswapped, "Zswapped_bytes", "Zswapped")                     \
    X(Dirty, "Dirty_bytes", "Dirty") X(Writeback, "Writeback_bytes", "Writeback")                  \
    X(AnonPages, "AnonPages_bytes", "AnonPages") X(Mapped, "Mapped_bytes", "Mapped")               \
    X(Shmem, "Shmem_bytes", "Shmem") X(KReclaimable, "KReclaimable_bytes", "KReclaimable")         \
    X(Slab, "Slab_bytes", "Slab") X(SReclaimable, "SReclaimable_bytes", "SReclaimable")            \
    X(SUnreclaim, "SUnreclaim_bytes", "SUnreclaim") X(KernelStack, "KernelStack_bytes", "KernelStack") \
    X(ShadowCallStack, "ShadowCallStack_bytes", "ShadowCallStack")                                 \
    X(PageTables, "PageTables_bytes", "PageTables")                                                \
    X(SecPageTables, "SecPageTables_bytes", "SecPageTables")                                       \
    X(NFS_Unstable, "NFS_Unstable_bytes", "NFS_Unstable") X(Bounce, "Bounce_bytes", "Bounce")      \
    X(WritebackTmp, "WritebackTmp_bytes", "WritebackTmp")                                          \
    X(CommitLimit, "CommitLimit_bytes", "CommitLimit")                                             \
    X(Committed_AS, "Committed_AS_bytes", "Committed_AS")                                          \
    X(VmallocTotal, "VmallocTotal_bytes", "VmallocTotal")                                          \
    X(VmallocUsed, "VmallocUsed_bytes", "VmallocUsed")                                             \
    X(VmallocChunk, "VmallocChunk_bytes", "VmallocChunk") X(Percpu, "Percpu_bytes", "Percpu")      \
    X(HardwareCorrupted, "HardwareCorrupted_bytes", "HardwareCorrupted")                           \
    X(AnonHugePages, "AnonHugePages_bytes", "AnonHugePages")                                       \
    X(ShmemHugePages, "ShmemHugePages_bytes", "ShmemHugePages")                                    \
    X(ShmemPmdMapped, "ShmemPmdMapped_bytes", "ShmemPmdMapped")                                    \
    X(FileHugePages, "FileHugePages_bytes", "FileHugePages")                                       \
    X(FilePmdMapped, "FilePmdMapped_bytes", "FilePmdMapped")                                       \
    X(CmaTotal, "CmaTotal_bytes", "CmaTotal") X(CmaFree, "CmaFree_bytes", "CmaFree")               \
    X(Unaccepted, "Unaccepted_bytes", "Unaccepted") X(Balloon, "Balloon_bytes", "Balloon")         \
    X(Hugepagesize, "Hugepagesize_bytes", "Hugepagesize") X(Hugetlb, "Hugetlb_bytes", "Hugetlb")   \
    X(DirectMap4k, "DirectMap4k_bytes", "DirectMap4k")                                             \
    X(DirectMap2M, "DirectMap2M_bytes", "DirectMap2M")                                             \
    X(DirectMap4M, "DirectMap4M_bytes", "DirectMap4M")                                             \
    X(DirectMap1G, "DirectMap1G_bytes", "DirectMap1G")

/* /proc/vmstat fields matched by node_exporter's default
 * --collector.vmstat.fields="^(oom_kill|pgpg|pswp|pg.*fault).*". */
#define HOST_VMSTAT(X)                                                                             \
    X(pgpgin) X(pgpgout) X(pswpin) X(pswpout) X(pgfault) X(pgmajfault) X(oom_kill)

/* netstat/snmp/snmp6 fields matched by node_exporter's default
 * --collector.netstat.fields on current kernels; X(protocol, field). */
#define HOST_NETSTAT(X)                                                                            \
    X(Icmp6, InErrors) X(Icmp6, InMsgs) X(Icmp6, OutMsgs) X(Icmp, InErrors) X(Icmp, InMsgs)        \
    X(Icmp, OutMsgs) X(Ip6, InOctets) X(Ip6, OutOctets) X(IpExt, InOctets) X(IpExt, OutOctets)     \
    X(Ip, Forwarding) X(TcpExt, ListenDrops) X(TcpExt, ListenOverflows)                            \
    X(TcpExt, SyncookiesFailed) X(TcpExt, SyncookiesRecv) X(TcpExt, SyncookiesSent)                \
    X(TcpExt, TCPSynRetrans) X(TcpExt, TCPTimeouts) X(Tcp, ActiveOpens) X(Tcp, CurrEstab)          \
    X(Tcp, InErrs) X(Tcp, InSegs) X(Tcp, OutRsts) X(Tcp, OutSegs) X(Tcp, PassiveOpens)             \
    X(Tcp, RetransSegs) X(Udp6, InDatagrams) X(Udp6, InErrors) X(Udp6, NoPorts)                    \
    X(Udp6, OutDatagrams) X(Udp6, RcvbufErrors) X(Udp6, SndbufErrors) X(UdpLite6, InErrors)        \
    X(UdpLite, InErrors) X(Udp, InDatagrams) X(Udp, InErrors) X(Udp, NoPorts)                      \
    X(Udp, OutDatagrams) X(Udp, RcvbufErrors) X(Udp, SndbufErrors)

/* /proc/net/sockstat{,6} pairs; X(protocol, state). */
#define HOST_SOCKSTAT(X)                                                                           \
    X(TCP, inuse) X(TCP, orphan) X(TCP, tw) X(TCP, alloc) X(TCP, mem) X(TCP, mem_bytes)            \
    X(UDP, inuse) X(UDP, mem) X(UDP, mem_bytes) X(UDPLITE, inuse) X(RAW, inuse) X(FRAG, inuse)     \
    X(FRAG, memory) X(TCP6, inuse) X(UDP6, inuse) X(UDPLITE6, inuse) X(RAW6, inuse)               \
    X(FRAG6, inuse) X(FRAG6, memory)

/* /proc/net/dev columns in file order, then rx_nohandler (sysfs). */
#define HOST_NETDEV(X)                                                                             \
    X(receive_bytes) X(receive_packets) X(receive_errs) X(receive_drop) X(receive_fifo)           \
    X(receive_frame) X(receive_compressed) X(receive_multicast) X(transmit_bytes)                  \
    X(transmit_packets) X(transmit_errs) X(transmit_drop) X(transmit_fifo) X(transmit_colls)       \
    X(transmit_carrier) X(transmit_compressed) X(receive_nohandler)

/* InfiniBand port counters: X(id, metric suffix, help, file, dir, x4).
 * The data counters count 4-byte words per lane; node_exporter multiplies
 * them by 4. */
#define HOST_IB_COUNTERS(X)                                                                        \
    X(LEGACY_MCAST_RX, "legacy_multicast_packets_received_total", "Number of multicast packets received", "port_multicast_rcv_packets", 1, 0) \
    X(LEGACY_DATA_RX, "legacy_data_received_bytes_total", "Number of data octets received on all links", "port_rcv_data_64", 1, 1) \
    X(LEGACY_PKTS_RX, "legacy_packets_received_total", "Number of data packets received on all links", "port_rcv_packets_64", 1, 0) \
    X(LEGACY_UCAST_RX, "legacy_unicast_packets_received_total", "Number of unicast packets received", "port_unicast_rcv_packets", 1, 0) \
    X(LEGACY_DATA_TX, "legacy_data_transmitted_bytes_total", "Number of data octets transmitted on all links", "port_xmit_data_64", 1, 1) \
    X(LEGACY_PKTS_TX, "legacy_packets_transmitted_total", "Number of data packets received on all links", "port_xmit_packets_64", 1, 0) \
    X(LEGACY_MCAST_TX, "legacy_multicast_packets_transmitted_total", "Number of multicast packets transmitted", "port_multicast_xmit_packets", 1, 0) \
    X(LEGACY_UCAST_TX, "legacy_unicast_packets_transmitted_total", "Number of unicast packets transmitted", "port_unicast_xmit_packets", 1, 0) \
    X(EXC_BUF_OVERRUN, "excessive_buffer_overrun_errors_total", "Number of times that OverrunErrors consecutive flow control update periods occurred, each having at least one overrun error.", "excessive_buffer_overrun_errors", 0, 0) \
    X(LINK_DOWNED, "link_downed_total", "Number of times the link failed to recover from an error state and went down", "link_downed", 0, 0) \
    X(LINK_ERR_RECOVERY, "link_error_recovery_total", "Number of times the link successfully recovered from an error state", "link_error_recovery", 0, 0) \
    X(LOCAL_LINK_INTEGRITY, "local_link_integrity_errors_total", "Number of times that the count of local physical errors exceeded the threshold specified by LocalPhyErrors.", "local_link_integrity_errors", 0, 0) \
    X(MCAST_RX, "multicast_packets_received_total", "Number of multicast packets received (including errors)", "multicast_rcv_packets", 0, 0) \
    X(MCAST_TX, "multicast_packets_transmitted_total", "Number of multicast packets transmitted (including errors)", "multicast_xmit_packets", 0, 0) \
    X(CONSTRAINT_RX, "port_constraint_errors_received_total", "Number of packets received on the switch physical port that are discarded", "port_rcv_constraint_errors", 0, 0) \
    X(CONSTRAINT_TX, "port_constraint_errors_transmitted_total", "Number of packets not transmitted from the switch physical port", "port_xmit_constraint_errors", 0, 0) \
    X(DATA_RX, "port_data_received_bytes_total", "Number of data octets received on all links", "port_rcv_data", 0, 1) \
    X(DATA_TX, "port_data_transmitted_bytes_total", "Number of data octets transmitted on all links", "port_xmit_data", 0, 1) \
    X(DISCARDS_RX, "port_discards_received_total", "Number of inbound packets discarded by the port because the port is down or congested", "port_rcv_discards", 0, 0) \
    X(DISCARDS_TX, "port_discards_transmitted_total", "Number of outbound packets discarded by the port because the port is down or congested", "port_xmit_discards", 0, 0) \
    X(ERRORS_RX, "port_errors_received_total", "Number of packets containing an error that were received on this port", "port_rcv_errors", 0, 0) \
    X(PKTS_RX, "port_packets_received_total", "Number of packets received on all VLs by this port (including errors)", "port_rcv_packets", 0, 0) \
    X(PKTS_TX, "port_packets_transmitted_total", "Number of packets transmitted on all VLs from this port (including errors)", "port_xmit_packets", 0, 0) \
    X(XMIT_WAIT, "port_transmit_wait_total", "Number of ticks during which the port had data to transmit but no data was sent during the entire tick", "port_xmit_wait", 0, 0) \
    X(UCAST_RX, "unicast_packets_received_total", "Number of unicast packets received (including errors)", "unicast_rcv_packets", 0, 0) \
    X(UCAST_TX, "unicast_packets_transmitted_total", "Number of unicast packets transmitted (including errors)", "unicast_xmit_packets", 0, 0) \
    X(REMOTE_PHYS_ERR, "port_receive_remote_physical_errors_total", "Number of packets marked with the EBP (End of Bad Packet) delimiter received on the port.", "port_rcv_remote_physical_errors", 0, 0) \
    X(SWITCH_RELAY_ERR, "port_receive_switch_relay_errors_total", "Number of packets that could not be forwarded by the switch.", "port_rcv_switch_relay_errors", 0, 0) \
    X(SYMBOL_ERR, "symbol_error_total", "Number of minor link errors detected on one or more physical lanes.", "symbol_error", 0, 0) \
    X(VL15_DROPPED, "vl15_dropped_total", "Number of incoming VL15 packets dropped due to resource limitations.", "VL15_dropped", 0, 0)

/* The netclass numeric properties: X(id, metric suffix, file, type). */
#define HOST_NETCLASS(X)                                                                           \
    X(ADDR_ASSIGN_TYPE, "address_assign_type", "addr_assign_type", EXPO_GAUGE)                     \
    X(CARRIER, "carrier", "carrier", EXPO_GAUGE)                                                   \
    X(CARRIER_CHANGES, "carrier_changes_total", "carrier_changes", EXPO_COUNTER)                   \
    X(CARRIER_UP, "carrier_up_changes_total", "carrier_up_count", EXPO_COUNTER)                    \
    X(CARRIER_DOWN, "carrier_down_changes_total", "carrier_down_count", EXPO_COUNTER)              \
    X(DEVICE_ID, "device_id", "dev_id", EXPO_GAUGE) X(DORMANT, "dormant", "dormant", EXPO_GAUGE)   \
    X(FLAGS, "flags", "flags", EXPO_GAUGE) X(IFACE_ID, "iface_id", "ifindex", EXPO_GAUGE)          \
    X(IFACE_LINK, "iface_link", "iflink", EXPO_GAUGE)                                              \
    X(IFACE_LINK_MODE, "iface_link_mode", "link_mode", EXPO_GAUGE)                                 \
    X(MTU, "mtu_bytes", "mtu", EXPO_GAUGE)                                                         \
    X(NAME_ASSIGN_TYPE, "name_assign_type", "name_assign_type", EXPO_GAUGE)                        \
    X(NET_DEV_GROUP, "net_dev_group", "netdev_group", EXPO_GAUGE)                                  \
    X(SPEED, "speed_bytes", "speed", EXPO_GAUGE)                                                   \
    X(TX_QUEUE_LEN, "transmit_queue_length", "tx_queue_len", EXPO_GAUGE)                           \
    X(PROTOCOL_TYPE, "protocol_type", "type", EXPO_GAUGE)
// clang-format on

enum {
    /* cpu */
    HOST_M_CPU_SECONDS,
    HOST_M_CPU_GUEST_SECONDS,
    HOST_M_CPU_CORE_THROTTLES,
    HOST_M_CPU_PACKAGE_THROTTLES,
    HOST_M_CPU_ISOLATED,
    /* stat */
    HOST_M_BOOT_TIME,
    HOST_M_CONTEXT_SWITCHES,
    HOST_M_FORKS,
    HOST_M_INTR,
    HOST_M_PROCS_RUNNING,
    HOST_M_PROCS_BLOCKED,
    /* loadavg */
    HOST_M_LOAD1,
    HOST_M_LOAD5,
    HOST_M_LOAD15,
    /* pressure */
    HOST_M_PSI_CPU_WAITING,
    HOST_M_PSI_IO_WAITING,
    HOST_M_PSI_IO_STALLED,
    HOST_M_PSI_MEM_WAITING,
    HOST_M_PSI_MEM_STALLED,
/* meminfo */
#define HOST__MEM_ENUM(id, key, field) HOST_M_MEM_##id,
    HOST_MEMINFO(HOST__MEM_ENUM) HOST_MEMINFO_COUNTS(HOST__MEM_ENUM)
#undef HOST__MEM_ENUM
/* vmstat */
#define HOST__VM_ENUM(f) HOST_M_VM_##f,
        HOST_VMSTAT(HOST__VM_ENUM)
#undef HOST__VM_ENUM
/* netdev */
#define HOST__ND_ENUM(f) HOST_M_NET_##f,
            HOST_NETDEV(HOST__ND_ENUM)
#undef HOST__ND_ENUM
    /* netclass */
    HOST_M_NET_UP,
    HOST_M_NET_INFO,
#define HOST__NC_ENUM(id, suffix, file, type) HOST_M_NC_##id,
    HOST_NETCLASS(HOST__NC_ENUM)
#undef HOST__NC_ENUM
    /* diskstats: the 17 counters in /proc/diskstats order, then udev */
    HOST_M_DISK_READS,
    HOST_M_DISK_READS_MERGED,
    HOST_M_DISK_READ_BYTES,
    HOST_M_DISK_READ_TIME,
    HOST_M_DISK_WRITES,
    HOST_M_DISK_WRITES_MERGED,
    HOST_M_DISK_WRITTEN_BYTES,
    HOST_M_DISK_WRITE_TIME,
    HOST_M_DISK_IO_NOW,
    HOST_M_DISK_IO_TIME,
    HOST_M_DISK_IO_TIME_WEIGHTED,
    HOST_M_DISK_DISCARDS,
    HOST_M_DISK_DISCARDS_MERGED,
    HOST_M_DISK_DISCARDED_SECTORS,
    HOST_M_DISK_DISCARD_TIME,
    HOST_M_DISK_FLUSHES,
    HOST_M_DISK_FLUSH_TIME,
    HOST_M_DISK_INFO,
    HOST_M_DISK_FILESYSTEM_INFO,
    HOST_M_DISK_DEVICE_MAPPER_INFO,
    HOST_M_DISK_ATA_WRITE_CACHE,
    HOST_M_DISK_ATA_WRITE_CACHE_ENABLED,
    HOST_M_DISK_ATA_ROTATION_RATE,
    /* filesystem */
    HOST_M_FS_AVAIL,
    HOST_M_FS_DEVICE_ERROR,
    HOST_M_FS_FILES,
    HOST_M_FS_FILES_FREE,
    HOST_M_FS_FREE,
    HOST_M_FS_READONLY,
    HOST_M_FS_SIZE,
    /* infiniband */
    HOST_M_IB_INFO,
    HOST_M_IB_STATE,
    HOST_M_IB_PHYS_STATE,
    HOST_M_IB_RATE,
#define HOST__IB_ENUM(id, suffix, help, file, ext, x4) HOST_M_IB_##id,
    HOST_IB_COUNTERS(HOST__IB_ENUM)
#undef HOST__IB_ENUM
    /* hwmon: the fixed families; the others are generated */
    HOST_M_HWMON_CHIP_NAMES,
    HOST_M_HWMON_SENSOR_LABEL,
    HOST_M_HWMON_BEEP_ENABLED,
    HOST_M_HWMON_VRM,
    HOST_M_HWMON_UPDATE_INTERVAL,
    HOST_M_HWMON_TEMP,
    HOST_M_HWMON_TEMP_MAX,
    HOST_M_HWMON_TEMP_CRIT,
    HOST_M_HWMON_TEMP_CRIT_ALARM,
    HOST_M_HWMON_TEMP_ALARM,
    HOST_M_HWMON_TEMP_MIN,
    HOST_M_HWMON_FAN,
    HOST_M_HWMON_FAN_MIN,
    HOST_M_HWMON_FAN_ALARM,
    HOST_M_HWMON_IN,
    HOST_M_HWMON_IN_MIN,
    HOST_M_HWMON_IN_MAX,
    HOST_M_HWMON_IN_ALARM,
    HOST_M_HWMON_CURR,
    HOST_M_HWMON_POWER_AVERAGE,
    HOST_M_HWMON_POWER_INPUT,
    HOST_M_HWMON_POWER_CAP,
    HOST_M_HWMON_POWER_ACCURACY,
    HOST_M_HWMON_POWER_AVERAGE_INTERVAL,
    HOST_M_HWMON_ENERGY,
    HOST_M_HWMON_PWM,
    HOST_M_HWMON_HUMIDITY,
/* netstat */
#define HOST__NS_ENUM(p, f) HOST_M_NS_##p##_##f,
    HOST_NETSTAT(HOST__NS_ENUM)
#undef HOST__NS_ENUM
    /* sockstat */
    HOST_M_SOCK_USED,
#define HOST__SS_ENUM(p, s) HOST_M_SS_##p##_##s,
    HOST_SOCKSTAT(HOST__SS_ENUM)
#undef HOST__SS_ENUM
    /* entropy, filefd, uname, time */
    HOST_M_ENTROPY_AVAIL,
    HOST_M_ENTROPY_POOL,
    HOST_M_FILEFD_ALLOCATED,
    HOST_M_FILEFD_MAXIMUM,
    HOST_M_UNAME_INFO,
    HOST_M_TIME_SECONDS,
    HOST_M_TIME_ZONE_OFFSET,
    HOST_M_CLOCKSOURCE_AVAILABLE,
    HOST_M_CLOCKSOURCE_CURRENT,
    HOST_M__COUNT
};

extern const agent_metric agent__host_metrics[HOST_M__COUNT];

/* ---- limits ----------------------------------------------------------- */

#define HOST_MAX_FILE          (16u << 20) /* biggest /proc file read whole */
#define HOST_MAX_LISTING       65536       /* entries of one class directory */
#define HOST_MAX_DEVICES       16384       /* lines of net/dev, diskstats; mounts */
#define HOST_MAX_CPUS          16384
#define HOST_ATTR_MAX          4096 /* one sysfs attribute */
#define HOST_STATFS_TIMEOUT_MS 1000
#define HOST_MAX_STUCK_HELPERS 16 /* statfs helpers left in a hung call */

/* ---- files ------------------------------------------------------------ */

/* A file re-read every cycle: opened relative to dirfd on first use, kept
 * open while the descriptor budget allows. rel is owned by whoever owns the
 * host_file (a literal or a device table's pool). */
typedef struct host_file {
    int fd;    /* -1: not open */
    int dirfd; /* borrowed */
    const char *rel;
} host_file;

/* A directory listing, sorted by name (as Go's os.ReadDir). */
typedef struct host_dent {
    uint32_t off;       /* into pool */
    unsigned char type; /* DT_* as getdents64 said */
} host_dent;

typedef struct host_names {
    char *pool;
    size_t pool_len, pool_cap;
    host_dent *e;
    size_t n, cap;
} host_names;

static inline const char *host_names_at(const host_names *l, size_t i) {
    return l->pool + l->e[i].off;
}

/* ---- per-subsystem state ------------------------------------------------ */

typedef struct host_cpu_prev { /* last exported values, node_exporter's jump-back guard */
    double v[10];
} host_cpu_prev;

typedef struct host_netdev_ent { /* one /proc/net/dev line */
    char *name;
    char *lbl; /* device="..." */
    host_file nohandler;
    char *rel;
} host_netdev_ent;

typedef struct host_disk_ent { /* one /proc/diskstats line (not excluded) */
    char *name;
    unsigned maj, min;
    char *lbl;     /* device="..." */
    char *info;    /* node_disk_info labels */
    char *fsinfo;  /* node_disk_filesystem_info labels or NULL */
    char *dminfo;  /* node_disk_device_mapper_info labels or NULL */
    double ata[3]; /* write cache, write cache enabled, rotation rate */
    unsigned char has_ata[3];
    uint64_t udev_cycle; /* cycle of the last udev read */
} host_disk_ent;

typedef struct host_sys_state host_sys_state;
typedef struct host_fs_state host_fs_state;

struct agent_host {
    char *procfs, *sysfs, *rootfs;
    int proc_fd, sys_fd;
    size_t fd_cap, fds_kept;
    uint64_t cycle, rebuilds;

    char *rb; /* whole-file reads */
    size_t rb_cap;
    char ab[HOST_ATTR_MAX + 1]; /* attribute reads */
    base_buf lb;                /* label builder */
    int lb_bad;                 /* a value added since the reset is not UTF-8 */
    base_buf nb;                /* name/help builder */
    char dents[32768];          /* getdents64 buffer */

    /* catalog lookup: open addressing over agent__host_metrics names */
    int *cat_slots;
    size_t cat_mask;
    uint64_t *cat_stamp; /* per catalog entry: the cycle its family was last started by _fam_dyn */
    const char **dyn;    /* generated family names started this cycle */
    size_t ndyn, dyn_cap;

    /* /proc files */
    host_file f_stat, f_meminfo, f_loadavg, f_psi[3], f_vmstat, f_netstat, f_snmp, f_snmp6, f_sockstat,
        f_sockstat6, f_entropy, f_poolsize, f_filenr, f_netdev, f_diskstats;

    /* cpu */
    host_cpu_prev *cpu_prev;
    unsigned char *cpu_seen;
    size_t ncpu_prev, cpu_cap;
    size_t ncpu_lines; /* cpuN lines in the last /proc/stat */
    char **cpu_lbl;    /* cpu="N", never freed before agent_host_free */
    size_t cpu_lbl_n;
    unsigned *isolated;
    size_t nisolated;

    /* netdev */
    host_netdev_ent *nd;
    size_t nnd, nd_cap;
    int net_class_fd; /* /sys/class/net, or -1 */

    /* diskstats */
    host_disk_ent *dk;
    size_t ndk, dk_cap;
    char *udev_dir; /* rootfs/run/udev/data */

    long page_size;
    host_sys_state *sys;
    host_fs_state *fs;
};

/* ---- host.c ------------------------------------------------------------ */

/* Reads the whole file into h->rb (NUL-terminated); *ret views it. Returns
 * 0 or a negative BASE_E_* (BASE_E_NOTFOUND when it cannot be opened). */
int agent__host_read(agent_host *h, host_file *f, base_str *ret);
/* One pread of at most max bytes (<= HOST_ATTR_MAX) into h->ab, as sysfs
 * attributes are read; the view is untrimmed. */
int agent__host_read_attr(agent_host *h, host_file *f, size_t max, base_str *ret);
void agent__host_file_close(agent_host *h, host_file *f);
static inline host_file agent__host_file(int dirfd, const char *rel) {
    return (host_file){-1, dirfd, rel};
}
#define NO_FILE ((host_file){-1, -1, NULL})

/* Lists dirfd (kept open; rewound each call) into out in the kernel's
 * order; "." and ".." left out. Returns 0 or a negative BASE_E_*.
 * _sort() orders by name (as Go's os.ReadDir); it may allocate, so the
 * per-cycle change checks compare unsorted listings. */
int agent__host_list(agent_host *h, int dirfd, host_names *out);
void agent__host_names_sort(host_names *l);
int agent__host_names_copy(host_names *dst, const host_names *src);
int agent__host_names_equal(const host_names *a, const host_names *b);
void agent__host_names_free(host_names *l);
/* d_type of entry i, resolving DT_UNKNOWN and (when follow) symlinks with fstatat. */
int agent__host_entry_type(int dirfd, const host_names *l, size_t i, int follow);

/* Starts a cycle: stamps it and forgets the families started so far (what
 * agent_host_collect() does first; the fuzz target drives emitters alone). */
void agent__host_cycle_begin(agent_host *h);

/* Families. _fam() takes a HOST_M_* id; _fam_dyn() a generated name: the
 * catalog's strings when the name is there, else copies in the set's arena. */
expo_family *agent__host_fam(expo_mset *ms, int id);
expo_family *agent__host_fam_dyn(agent_host *h, expo_mset *ms, const char *name, size_t n, expo_type type,
                                 const char *help, size_t helpn);
/* The catalog entry named name, or NULL. */
const agent_metric *agent__host_cat_find(const agent_host *h, const char *name, size_t n);

/* Label builder over h->lb: reset, add pairs, then take the string either
 * into the set's arena (_arena) or as a malloc'd copy (_dup, for tables).
 * Both return NULL on allocation failure or when a value is not UTF-8
 * (client_golang refuses such a series; so do we) or holds a NUL byte. */
void agent__host_lb_reset(agent_host *h);
void agent__host_lb_add(agent_host *h, const char *name, const char *value, size_t n);
const char *agent__host_lb_arena(agent_host *h, expo_mset *ms);
char *agent__host_lb_dup(agent_host *h);
char *agent__host_strndup(const char *s, size_t n);

/* Text helpers. */
base_str agent__host_next_line(base_str *rest);
base_str agent__host_next_field(base_str *line); /* blanks, tabs and newlines separate */
base_str agent__host_trim(base_str s);           /* blanks, tabs, newlines */
int agent__host_utf8_valid(const char *s, size_t n);
/* Go's strconv.ParseInt(s, 0, 64): optional sign, 0x/0o/0b/0 prefixes. */
int agent__host_parse_int_base0(base_str s, int64_t *ret);
/* Go's strconv.ParseFloat(s, 64) for the inputs the kernel writes. */
int agent__host_parse_float(base_str s, double *ret);

/* ---- host_proc.c ------------------------------------------------------- */

/* Each takes a file's text and adds its families to ms. */
void agent__host_emit_stat(agent_host *h, base_str text, expo_mset *ms);
void agent__host_emit_meminfo(agent_host *h, base_str text, expo_mset *ms);
void agent__host_emit_vmstat(agent_host *h, base_str text, expo_mset *ms);
/* net/netstat and net/snmp (header/value line pairs, snmp6 = 0) or
 * net/snmp6 ("Ip6InOctets 123" lines, snmp6 = 1). */
void agent__host_emit_netstat(agent_host *h, base_str text, int snmp6, expo_mset *ms);
void agent__host_emit_sockstat(agent_host *h, base_str text, int ipv6, expo_mset *ms);
void agent__host_emit_netdev(agent_host *h, base_str text, expo_mset *ms);
void agent__host_emit_diskstats(agent_host *h, base_str text, expo_mset *ms);
void agent__host_emit_loadavg(agent_host *h, base_str text, expo_mset *ms);
/* kind: 0 cpu, 1 io, 2 memory */
void agent__host_emit_pressure(agent_host *h, int kind, base_str text, expo_mset *ms);
void agent__host_emit_filefd(agent_host *h, base_str text, expo_mset *ms);
/* Parses a udev database file into the disk entry's labels. */
void agent__host_disk_udev(agent_host *h, host_disk_ent *d, base_str text);
void agent__host_proc_free(agent_host *h);
/* `cpu="N"`, owned by h until agent_host_free(); NULL on allocation failure. */
const char *agent__host_cpu_label(agent_host *h, size_t id);

/* node_exporter's default exclusions. */
int agent__host_disk_excluded(const char *name, size_t n);
int agent__host_netstat_field_wanted(const char *key, size_t n);
int agent__host_vmstat_field_wanted(const char *key, size_t n);
int agent__host_mountpoint_excluded(const char *mp, size_t n);
int agent__host_fstype_excluded(const char *t, size_t n);

/* ---- host_sys.c -------------------------------------------------------- */

int agent__host_sys_new(agent_host *h);
void agent__host_sys_free(agent_host *h);
void agent__host_sys_collect(agent_host *h, expo_mset *ms);
/* "1,3-5" into a sorted list; Returns the count or a negative BASE_E_*. */
int agent__host_parse_cpulist(base_str s, unsigned *out, size_t max);
/* hwmon's name cleaning: lower case, [^a-z0-9:_] -> '_', trim '_'. */
size_t agent__host_hwmon_clean(const char *s, size_t n, char *out, size_t cap);
/* hwmon's file name split: <type><num>_<property>. Returns 1 when it has
 * that shape. */
int agent__host_hwmon_split(const char *name, base_str *type, int *num, base_str *prop);

/* ---- host_fs.c --------------------------------------------------------- */

int agent__host_fs_new(agent_host *h);
void agent__host_fs_free(agent_host *h);
void agent__host_fs_collect(agent_host *h, expo_mset *ms);
void agent__host_fs_set_statfs(agent_host *h, agent_host_statfs_fn fn, int timeout_ms);
size_t agent__host_fs_stuck(const agent_host *h);
/* Splits one mounts line (octal \040 and \011 decoded into dec, which must
 * hold the line's length); returns 1 on success. */
int agent__host_parse_mount(base_str line, base_str *dev, base_str *mnt, base_str *fstype, base_str *opts,
                            char *dec, size_t deccap);

#endif
