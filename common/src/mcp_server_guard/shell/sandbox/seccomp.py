"""A seccomp filter for boxed commands: a classic BPF program generated here, loaded with prctl.

It refuses what the other layers cannot express: kernel-wide operations (mount, module loading,
kexec, reboot, swap, clock setting, keyrings, bpf, perf), peeking at other processes (ptrace,
process_vm_*, pidfd_getfd, kcmp), another process's resource limits (prlimit with a pid), new namespaces
(clone/unshare/setns with namespace flags), device nodes (mknod of block and character devices), io_uring
(its operations bypass this filter), terminal injection (ioctl TIOCSTI), socket families other than UNIX,
IPv4, IPv6 and netlink (AF_VSOCK would reach the host past the call's network namespace), and, where nothing
else keeps a command from the host's sockets, UNIX-domain sockets (``unix_sockets=False``; socketpair stays
allowed). The box allows them: it masks the pathname sockets outside a call's roots in the call's view (see
``sockets``), and the host's abstract ones are in another network namespace or scoped by Landlock.

The program checks the architecture first (another ABI's syscall numbers would slip past the table),
refuses x32 calls on x86_64, and answers ``clone3`` with ENOSYS so that libc falls back to ``clone``,
whose flags the filter can read. Everything else is allowed: this is a deny list over a box whose
file system, processes and network are already confined by namespaces and Landlock.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from mcp_server_guard import linux

# Classic BPF instruction classes and fields, and seccomp return values.
_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JGE_K = 0x35
_BPF_JSET_K = 0x45
_BPF_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_RET_USER_NOTIF = 0x7FC00000
_OFF_NR, _OFF_ARCH = 0, 4
_X32_BIT = 0x40000000
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

AF_UNIX = 1
AF_INET = 2
AF_INET6 = 10
AF_NETLINK = 16  # getifaddrs, getaddrinfo's AI_ADDRCONFIG
TIOCSTI = 0x5412
S_IFCHR = 0o020000  # also set in S_IFBLK (0o060000), never in S_IFIFO, S_IFREG or S_IFSOCK
CLONE_NAMESPACES = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
    | 0x00000080  # CLONE_NEWTIME
)

# Refused outright (EPERM), by name; a name missing from an architecture's table does not exist there.
DENIED = (
    "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "fsopen", "fsconfig", "fsmount", "move_mount",
    "open_tree", "unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "fanotify_init",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load", "reboot",
    "init_module", "finit_module", "delete_module", "swapon", "swapoff", "acct", "quotactl", "syslog",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "vhangup",
    "name_to_handle_at", "open_by_handle_at", "lookup_dcookie", "iopl", "ioperm", "uselib", "nfsservctl",
    "_sysctl", "create_module", "query_module", "get_kernel_syms",
)  # fmt: skip


# The mount calls, and unshare. The box loads the filter in two parts: everything else once, in each init's main
# thread (every thread it starts for a call inherits it: the kernel's work on a filter this size is ~0.2 ms a
# load), then a small part with these, by the call's thread just before the command starts: until then that
# thread enters a mount and IPC namespace of its own and builds the call's view in it.
MOUNT_CALLS = (
    "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "fsopen", "fsconfig", "fsmount", "move_mount",
    "open_tree",
)  # fmt: skip
LATE_CALLS = (*MOUNT_CALLS, "unshare")


@dataclass(frozen=True)
class Arch:
    name: str
    audit: int  # AUDIT_ARCH_* as the kernel puts it in seccomp_data.arch
    numbers: dict[str, int]
    x32: bool = False  # has an x32 ABI sharing the audit arch (x86_64)


X86_64 = Arch(
    "x86_64",
    0xC000003E,
    {
        "ioctl": 16, "socket": 41, "clone": 56, "ptrace": 101, "syslog": 103, "mknod": 133, "uselib": 134,
        "vhangup": 153, "pivot_root": 155, "_sysctl": 156, "adjtimex": 159, "chroot": 161, "acct": 163,
        "settimeofday": 164, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
        "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173, "create_module": 174,
        "init_module": 175, "delete_module": 176, "get_kernel_syms": 177, "query_module": 178, "quotactl": 179,
        "nfsservctl": 180, "lookup_dcookie": 212, "clock_settime": 227, "kexec_load": 246, "add_key": 248,
        "request_key": 249, "keyctl": 250, "mknodat": 259, "unshare": 272, "perf_event_open": 298,
        "fanotify_init": 300, "name_to_handle_at": 303, "open_by_handle_at": 304, "clock_adjtime": 305,
        "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "finit_module": 313,
        "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "clone3": 435, "pidfd_getfd": 438, "mount_setattr": 442,
        "rename": 82, "renameat": 264, "renameat2": 316, "socketpair": 53, "prlimit64": 302,
        "copy_file_range": 326, "link": 86, "linkat": 265,
    },
    x32=True,
)  # fmt: skip
AARCH64 = Arch(
    "aarch64",
    0xC00000B7,
    {
        "lookup_dcookie": 18, "ioctl": 29, "mknodat": 33, "umount2": 39, "mount": 40, "pivot_root": 41,
        "chroot": 51, "vhangup": 58, "quotactl": 60, "acct": 89, "unshare": 97, "kexec_load": 104,
        "init_module": 105, "delete_module": 106, "clock_settime": 112, "syslog": 116, "ptrace": 117,
        "reboot": 142, "sethostname": 161, "setdomainname": 162, "settimeofday": 170, "adjtimex": 171,
        "socket": 198, "add_key": 217, "request_key": 218, "keyctl": 219, "clone": 220, "swapon": 224,
        "swapoff": 225, "perf_event_open": 241, "fanotify_init": 262, "name_to_handle_at": 264,
        "open_by_handle_at": 265, "clock_adjtime": 266, "setns": 268, "process_vm_readv": 270,
        "process_vm_writev": 271, "kcmp": 272, "finit_module": 273, "bpf": 280, "userfaultfd": 282,
        "kexec_file_load": 294, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "clone3": 435,
        "pidfd_getfd": 438, "mount_setattr": 442, "renameat": 38, "renameat2": 276, "socketpair": 199,
        "prlimit64": 261, "copy_file_range": 285, "linkat": 37,
    },
)  # fmt: skip
ARCHES = {"x86_64": X86_64, "amd64": X86_64, "aarch64": AARCH64, "arm64": AARCH64}


def native_arch() -> Arch | None:
    return ARCHES.get(os.uname().machine.lower())


class _Program:
    """Appends instructions; jumps are relative, counted in instructions after the jump."""

    def __init__(self) -> None:
        self.code: list[bytes] = []

    def op(self, code: int, k: int, jt: int = 0, jf: int = 0) -> None:
        self.code.append(struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF))

    def load(self, offset: int) -> None:
        self.op(_BPF_LD_W_ABS, offset)

    def ret(self, value: int) -> None:
        self.op(_BPF_RET_K, value)

    def deny(self, err: int) -> None:
        self.ret(_RET_ERRNO | err)

    def deny_if(self, nr: int, err: int) -> None:
        """If the syscall number (in the accumulator) is ``nr``, fail with ``err``."""
        self.op(_BPF_JEQ_K, nr, 0, 1)
        self.deny(err)

    def deny_if_arg(self, nr: int, arg: int, *, equals: int | None = None, any_bits: int | None = None) -> None:
        """If the syscall is ``nr`` and its 32-bit argument ``arg`` matches, fail with EPERM; else go on."""
        self.op(_BPF_JEQ_K, nr, 0, 4)
        self.load(16 + 8 * arg)  # low 32 bits of args[arg] (little-endian targets)
        if equals is not None:
            self.op(_BPF_JEQ_K, equals, 0, 1)
        else:
            assert any_bits is not None
            self.op(_BPF_JSET_K, any_bits, 0, 1)
        self.deny(errno.EPERM)
        self.load(_OFF_NR)

    def allow_only_arg(self, nr: int, arg: int, allowed: tuple[int, ...], err: int) -> None:
        """If the syscall is ``nr``, its 32-bit argument ``arg`` must be one of ``allowed``, else it fails with
        ``err``; other syscalls go on."""
        n = len(allowed)
        self.op(_BPF_JEQ_K, nr, 0, n + 3)
        self.load(16 + 8 * arg)
        for i, value in enumerate(allowed):
            self.op(_BPF_JEQ_K, value, n - i, 0)
        self.deny(err)
        self.load(_OFF_NR)


# What a command on a copy has its init answer (see renames.py): directory renames the overlay cannot make; and the
# names it links, noted (the kernel makes them).
RENAME_CALLS = ("rename", "renameat", "renameat2", "link", "linkat")


def build_filter(arch: Arch, *, unix_sockets: bool = False, part: str = "all", notify: bool = False) -> bytes:
    """The filter program for ``arch`` as raw ``struct sock_filter`` bytes (what bwrap's --seccomp reads).

    ``part``: "all"; or "early" (all but ``LATE_CALLS``) and "late" (only those), which together refuse exactly
    what "all" refuses (filters stack: every loaded filter is asked, the strictest answer wins).
    ``notify``: the rename calls go to a user-notification listener (the part is loaded with one).
    """
    prog = _Program()
    prog.load(_OFF_ARCH)
    prog.op(_BPF_JEQ_K, arch.audit, 1, 0)
    prog.ret(_RET_KILL_PROCESS)  # another ABI (i386 on x86_64): its numbers would bypass the table
    prog.load(_OFF_NR)
    if arch.x32:
        prog.op(_BPF_JGE_K, _X32_BIT, 0, 1)
        prog.deny(errno.EPERM)
    for name in DENIED:
        wanted = {"all": True, "early": name not in LATE_CALLS, "late": name in LATE_CALLS}[part]
        if wanted and name in arch.numbers:
            prog.deny_if(arch.numbers[name], errno.EPERM)
    if notify:
        for name in RENAME_CALLS:
            if name in arch.numbers:
                prog.op(_BPF_JEQ_K, arch.numbers[name], 0, 1)
                prog.ret(_RET_USER_NOTIF)
        # On the copy, a file with several names that the command renamed gets an overlay inode of its own per name
        # (overlayfs without an index): a write through another name leaves this one's cached size behind, and
        # copy_file_range stops at that size (``cp`` copied the file short; read, sendfile and stat see it whole).
        # Answered ENOSYS, as by a kernel without the call: every program that uses it reads and writes instead.
        prog.deny_if(arch.numbers["copy_file_range"], errno.ENOSYS)
    if part != "late":
        prog.deny_if(arch.numbers["clone3"], errno.ENOSYS)  # its flags sit behind a pointer: make libc use clone
        prog.deny_if_arg(arch.numbers["clone"], 0, any_bits=CLONE_NAMESPACES)
        prog.deny_if_arg(arch.numbers["ioctl"], 1, equals=TIOCSTI)
        # Threat: a socket family that does not stop at the call's network namespace (AF_VSOCK reaches the
        # hypervisor or the host's vsock services, past the egress proxy), or a rarely used protocol's code in
        # the kernel. Only the families everyday programs use can be made.
        families = (AF_INET, AF_INET6, AF_NETLINK) + ((AF_UNIX,) if unix_sockets else ())
        prog.allow_only_arg(arch.numbers["socket"], 0, families, errno.EAFNOSUPPORT)
        prog.allow_only_arg(arch.numbers["socketpair"], 0, (AF_UNIX,), errno.EAFNOSUPPORT)
        for name, arg in (("mknod", 1), ("mknodat", 2)):
            if name in arch.numbers:
                prog.deny_if_arg(arch.numbers[name], arg, any_bits=S_IFCHR)
        # Threat: a command lowering (or marking) the limits of another process in its PID namespace — its init,
        # which serves the next calls — with prlimit(pid, ...). A process may still set its own (pid 0: what
        # setrlimit and the shell's ulimit send).
        prog.allow_only_arg(arch.numbers["prlimit64"], 0, (0,), errno.EPERM)
    prog.ret(_RET_ALLOW)
    return b"".join(prog.code)


class SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def load_filter(program: bytes) -> None:
    """Apply ``program`` to the calling thread (and everything it starts); sets no_new_privs first."""
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    linux.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog))


def denied_names(arch: Arch) -> Iterable[str]:
    """Every syscall the filter refuses outright on ``arch`` (for docs and tests)."""
    return [name for name in DENIED if name in arch.numbers]
