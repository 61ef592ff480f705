"""What text in another language runs: the command lines a program's code or script hands to a shell.

``python3 -c 'os.system("rm -rf ~")'``, ``awk 'BEGIN{system("…")}'``, ``sed '1e …'``, ``gdb -ex 'shell …'``,
``vim -c '!…'``, a Makefile's recipes, an sqlite ``.shell`` line: each reader here takes the text itself (code,
a script, one editor or debugger command) and returns what it runs, for judging like a command line (a string),
a command (words), or ``DYNAMIC`` when only run time knows it or the text is code this layer cannot read. String
checks, advisory like the rest of the policy engine. Finding the text among a program's arguments is
``run_options``' and ``unknown_programs``'; reading stdin or a file for it is ``rules``'.
"""

from __future__ import annotations

import bisect
import contextlib
import re
import unicodedata

from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell.strings.parsing import Word
from mcp_server_guard.shell.strings.wrappers import BUILT, DYNAMIC, Inner

# String literals given to a call that runs them as a command line, in interpreter code.
_CODE_RUNS = deferred(
    r"""(?:\bsystem|\bpopen|\bexec[lv]?p?e?|\bspawn|\bcheck_output|\bcheck_call|\bgetoutput|\bgetstatusoutput|\brun|\bcall|\bshell_exec|\bpassthru|\bexecSync|\bexecFileSync|\bspawnSync|\bexecute|\bcallCommand|\bspawn\w+|\bshell-command|\bcall-process-shell-command|\bstart-process-shell-command|\bproc_open|\bpcntl_exec|\brun-shell-command|\bos:cmd|\bSystem\.shell|\bshell_command|\bgetRuntime\(\)\.exec|\bopen\s*\(?\s*\w+\s*,\s*(?=['"]\|))\s*(?:\(\s*){0,4}(?:\w{1,16}\s*=\s*)?(?:[rRbBuUfF]{1,2}(?=['"]))?(['"])\|?((?:\\.|(?!\1)[^\\])*)\1"""
)
_EXECUTE_METHOD = deferred(r"""(['"])((?:\\.|(?!\1)[^\\])+)\1\s*\.execute\s*\(""")  # groovy: "cmd".execute()
_BACKTICKS = deferred(r"`([^`]+)`")
# Ruby's %x(…) and %x{…}, Perl's qx(…), qx{…}, qx/…/: the command up to the closing character (``_closed_after``).
_QUOTED_RUNS = {")": re.compile(r"%x\(|\bqx\s*\("), "}": re.compile(r"%x\{|\bqx\s*\{"), "/": re.compile(r"\bqx\s*/")}


def debugger_command(text: Inner) -> Inner:
    """What one gdb command runs (``shell …``, ``!…``, ``pipe … | …``); DYNAMIC for code of another language."""
    if not isinstance(text, str):
        return text
    stripped = text.strip()
    if stripped.startswith("!"):
        return stripped[1:]
    word, _, tail = stripped.partition(" ")
    if word in ("shell", "she", "pipe", "|"):
        return tail
    if word in ("python", "py", "pi", "python-interactive", "guile", "gu", "source", "so"):
        return DYNAMIC  # code of another language, or a script from a file
    return None


def editor_command(text: Inner) -> Inner:
    """What one vim command runs (``:!…``, ``:r !…``, ``:%!…``); DYNAMIC for code or a call that runs one."""
    if not isinstance(text, str):
        return text
    stripped = text.lstrip(": ")
    for prefix in ("silent!", "silent", "sil!", "sil", "exe", "execute"):
        if stripped.startswith(prefix + " "):
            stripped = stripped[len(prefix) + 1 :].lstrip()
    stripped = stripped.strip("\"'")  # :exe "!cmd"
    if stripped.startswith("!"):
        return stripped[1:]
    if "!" in stripped and re.match(r"^(\d+|%|\.|\$|'<,'>|\d+,\d+)?\s*(r|read|w|write)?\s*!", stripped):
        return stripped.split("!", 1)[1]  # :r !cmd, :%!cmd, :w !cmd
    if re.match(r"^(py|python|py3|python3|pyx|lua|perl|ruby|rub|mz|tcl|call|term|terminal|source|so|!)\b", stripped):
        return DYNAMIC
    if re.search(r"\bsystem\s*\(|\bsystemlist\s*\(|\bjobstart\s*\(|\btermopen\s*\(", stripped):
        return DYNAMIC
    return None


def _sed_address(script: str, i: int) -> int:
    """The index after one sed address at ``i`` (a number, ``first~step``, ``$``, ``/re/``, ``\\cREc``, with its I/M
    flags), or ``i`` where there is none."""
    n = len(script)
    if i < n and script[i].isdigit():
        while i < n and (script[i].isdigit() or script[i] == "~"):
            i += 1
        return i
    if i < n and script[i] == "$":
        return i + 1
    if i < n and script[i] in "/\\":
        delimiter = "/"
        if script[i] == "\\":
            if i + 1 >= n:
                return n
            delimiter, i = script[i + 1], i + 1
        i += 1
        while i < n and script[i] != delimiter:
            i += 2 if script[i] == "\\" else 1
        i += 1
        while i < n and script[i] in "IM":
            i += 1
    return i


def _sed_range_end(script: str, i: int) -> int:
    """The index after a range's second address at ``i`` (an address, or ``+N`` / ``~N``)."""
    if i < len(script) and script[i] in "+~":
        i += 1
        while i < len(script) and script[i].isdigit():
            i += 1
        return i
    return _sed_address(script, i)


def _sed_until(script: str, i: int, ends: str) -> int:
    """The first index at or after ``i`` holding one of ``ends`` (or the script's end)."""
    return min((j for j in (script.find(c, i) for c in ends) if j >= 0), default=len(script))


def _sed_past_parts(script: str, i: int) -> int:
    """The index after the two delimited parts of ``s`` or ``y`` (the delimiter at ``i``)."""
    n = len(script)
    if i >= n:
        return n
    delimiter, parts = script[i], 0
    i += 1
    while i < n and parts < 2:
        if script[i] == "\\":
            i += 2
            continue
        parts += script[i] == delimiter
        i += 1
    return i


def sed_commands(script: str) -> list[tuple[str, str]]:
    """Each command of a GNU sed script, as (its letter, its argument): ``1e ./x`` is ("e", "./x"); ``s`` gives its
    flags (``sxaxbxw f`` is ("s", "w f")); addresses of any form are passed over (red team 20 F10/F11: ``\\,a,w f``,
    ``1~2w f``, ``/a/Iw f``, ``1,+3w f``, a letter as s's delimiter)."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(script)
    while i < n:
        while i < n and script[i] in " \t\n;{}!":
            i += 1
        if i >= n:
            break
        if script[i] == "#":
            i = _sed_until(script, i, "\n")
            continue
        i = _sed_address(script, i)
        if i < n and script[i] == ",":
            i = _sed_range_end(script, i + 1)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            break
        letter = script[i]
        i += 1
        if letter in "sy":
            i = _sed_past_parts(script, i)
            end = _sed_until(script, i, ";\n}")
            if "w" in script[i:end]:
                end = _sed_until(script, i, "\n")  # s///w FILE: the file's name is the rest of the line
            out.append((letter, script[i:end].strip()))
            i = end
        elif letter in "aicrRwWe:bTtvFlLqQ":
            end = _sed_until(script, i, "\n" if letter in "aicrRwWe:" else ";\n}")
            while letter in "aic" and end < n and script[i:end].rstrip().endswith("\\"):
                end = _sed_until(script, end + 1, "\n")  # a\ TEXT: the text goes on while a line ends in \
            out.append((letter, script[i:end].strip()))
            i = end
        else:
            out.append((letter, ""))
    return out


def _s_flags(argument: str) -> str:
    return argument.split(" ", 1)[0].split("w", 1)[0] + ("w" if "w" in argument.split(" ", 1)[0] else "")


_SED_STANDARD = ("/dev/stdout", "/dev/stderr", "/dev/null")


def sed_writes(script: str) -> bool:
    """Whether a sed script writes a file (``w``, ``W``, ``s///w``; not /dev/stdout and the like) or runs a command
    (``e``, ``s///e``)."""
    for letter, argument in sed_commands(script):
        flags = _s_flags(argument) if letter == "s" else ""
        target = argument.partition("w")[2].strip() if letter == "s" else argument
        if letter == "e" or "e" in flags:
            return True
        if (letter in "wW" or "w" in flags) and target not in _SED_STANDARD:
            return True
    return False


def sed_write_targets(script: str) -> list[str]:
    """The files a sed script's ``w``, ``W`` and ``s///w`` write."""
    out = []
    for letter, argument in sed_commands(script):
        if letter in "wW" and argument:
            out.append(argument)
        elif letter == "s" and "w" in _s_flags(argument):
            out.append(argument.partition("w")[2].strip())
    return [target for target in out if target and target not in _SED_STANDARD]


def sed_runs(script: str) -> Inner:
    """GNU sed's ``e COMMAND`` runs COMMAND (``e`` alone runs the pattern space); ``s///e`` runs the result."""
    for letter, argument in sed_commands(script):
        if letter == "e":
            return argument if argument else DYNAMIC
        if letter == "s" and "e" in _s_flags(argument):
            return DYNAMIC  # the replaced line is run as a command: known only at run time
    return None


_AWK_STRING = r'"((?:\\.|[^"\\])*)"'
_AWK_LITERAL_RUN = deferred(rf"\bsystem\s*\(\s*{_AWK_STRING}\s*\)|{_AWK_STRING}\s*\|&?\s*getline|\|&?\s*{_AWK_STRING}")
# (on the program with its strings emptied: a `;` or `}` inside one hides nothing — red team 21)
_AWK_ANY_RUN = deferred(r"\bsystem\s*\(|\|&?\s*getline|\bprintf?\b[^;}]*\|")
_AWK_WRITE = deferred(r"\bprintf?\b[^;}]*?>>?\s*(\"\"|\S)")
_AWK_TARGET = deferred(rf">>?\s*{_AWK_STRING}")  # (a comparison with a string is taken for one too: harmless)


def _awk_blanked(program: str) -> str:
    """``program`` with every string literal emptied (``"a;b"`` is ``""``)."""
    return re.sub(_AWK_STRING, '""', program)


def awk_runs(program: str) -> Inner:
    """awk's system("…"), "…" | getline and print | "…" (and gawk's ``|&`` coprocess) run a shell command line."""
    texts = [next(g for g in found.groups() if g is not None) for found in _AWK_LITERAL_RUN.finditer(program)]
    rest = _awk_blanked(_AWK_LITERAL_RUN.sub("", program))
    if _AWK_ANY_RUN.search(rest):
        return DYNAMIC  # built from values at run time
    return "\n".join(t.replace('\\"', '"') for t in texts) if texts else None


def awk_writes(program: str) -> tuple[bool, list[str]]:
    """Whether an awk program writes a file (``print > f``, ``printf >> f``; strings emptied first) or runs a
    command, and the files it names literally as such targets."""
    blanked = _awk_blanked(program)
    runs = _AWK_ANY_RUN.search(blanked) is not None or _AWK_LITERAL_RUN.search(program) is not None
    return runs or _AWK_WRITE.search(blanked) is not None, [m.group(1) for m in _AWK_TARGET.finditer(program)]


def literal_commands(code: str) -> list[Inner]:
    """Command lines interpreter code hands to a shell as literals: system("…"), `…`, os.popen('…'); and the paths
    it deletes through its library (shutil.rmtree('…'), FileUtils.rm_rf('…'), fs.rmSync('…')), as the rm they are."""
    out: list[Inner] = [_handed(code, found) for found in _CODE_RUNS.finditer(code)]
    out += [_joined(code, close, begin) for begin, close in _spans_after(code, _LIST_RUNS, "]")]
    out += [BUILT for _ in _NAME_JOINED.finditer(code)]
    out += [found.group(1) for found in _BACKTICKS.finditer(code)]
    out += [text for closer, opener in _QUOTED_RUNS.items() for text in _closed_after(code, opener, closer)]
    out += [found.group(2) for found in _EXECUTE_METHOD.finditer(code)]
    out = [text for text in out if text is BUILT or (isinstance(text, str) and text.strip())]
    for listed in _closed_after(code, _ARGV_LISTS, "]"):
        inside = re.sub(r"\bsys\.executable\b", "'python3'", listed)  # `[sys.executable, '-m', 'pip', …]`
        items = _ITEMS.findall(inside)
        if items and len(items) == inside.count(",") + 1:  # every item a literal
            out.append([[Word(item, item) for _, item in items]])
    if _HOME_DELETES.search(code):
        out.append([[Word("rm", "rm"), Word("-rf", "-rf"), Word("~", "~")]])
    if _KILLS_ALL.search(code):
        out.append([[Word("kill", "kill"), Word("-9", "-9"), Word("-1", "-1")]])
    for found in _OPENS_DEVICE.finditer(code):
        out.append([[Word("dd", "dd"), Word(f"of={found.group(1)}", f"of={found.group(1)}")]])
    for found in _CODE_DELETES.finditer(code):
        path = found.group(2)
        out.append([[Word("rm", "rm"), Word("-rf", "-rf"), Word(path, path)]])
    for path in code_writes(code):
        out.append([[Word("tee", "tee"), Word("-a", "-a"), Word(path, path)]])
    # pip run in the interpreter (red team 20 F4): pip.main([...]), runpy.run_module('pip') with sys.argv set
    argv_set = bool(_RUNS_PIP_MODULE.search(code))  # sys.argv set for runpy's pip (not another module)
    main = _PIP_IMPORTED_MAIN if re.search(r"\bpip\._internal", code) else _PIP_MAIN
    for opener, skip in ((main, 0), *(((_SYS_ARGV, 1),) if argv_set else ())):
        for inside in _closed_after(code, opener, "]"):
            items = _ITEMS.findall(inside)
            out.append([[Word("pip", "pip"), *(Word(item, item) for _, item in items[skip:])]])
    return out


def _closed_after(code: str, opener: re.Pattern[str], closer: str, each: int = 32) -> list[str]:
    return [code[begin:close] for begin, close in _spans_after(code, opener, closer, each)]


def _spans_after(code: str, opener: re.Pattern[str], closer: str, each: int = 32) -> list[tuple[int, int]]:
    """The text from each match of ``opener`` up to the next ``closer`` (a ``[ … ]`` list, a ``%x( … )``). Threat: a
    regular expression scanning to the next closer from each of thousands of openings (``run([`` or ``%x(`` repeated
    over a 256 KiB line) took minutes. The closers are found once; of the openings one closer ends (nested calls,
    openings inside a literal), the ``each`` outermost and innermost are read: a line costs at most ``2 * each``
    times its length."""
    closes = [m.start() for m in re.finditer(re.escape(closer), code)]
    by_close: dict[int, list[int]] = {}
    for start in opener.finditer(code):
        at = bisect.bisect_left(closes, start.end())
        if at == len(closes):
            break  # nothing closes after this one, nor after any later one
        by_close.setdefault(closes[at], []).append(start.end())
    return [(begin, close) for close, starts in by_close.items()
            for begin in dict.fromkeys([*starts[:each], *starts[-each:]])]  # fmt: skip


# The quoted items of a list (each a literal: its quote, its text).
_ITEMS = deferred(r"""(['"])((?:\\.|(?!\1)[^\\])*)\1""")
_PIP_MAIN = deferred(r"\bpip(?:\._internal(?:\.cli)?(?:\.main)?)?\.main\s*\(\s*\[")
_PIP_IMPORTED_MAIN = deferred(r"\b(?:\w+\.)?main\s*\(\s*\[")  # `from pip._internal.cli.main import main; main([…])`
_SYS_ARGV = deferred(r"\bsys\.argv\s*=\s*\[")
_RUNS_PIP_MODULE = deferred(r"\brun_module\s*\(\s*['\"]pip['\"]")


# Files interpreter code writes through its library (red teams 20, 47): open('…', 'a'), Path('…').write_text(…),
# fs.appendFileSync('…', …), file_put_contents('…', …), File.write('…', …), os.open('…', O_WRONLY …), and the
# destination of a copy, move, replace or link (shutil.copy(…, '…'), os.replace, fs.copyFileSync, FileUtils.mv):
# the `tee -a` they are. String checks: advisory, as every other (a path built at run time goes unseen).
_LITERAL = r"""(['"])((?:\\.|(?!{q})[^\\]){{1,4096}}){q}"""
_OPENS = r"(?:open|fopen|io\.open|codecs\.open|FileIO|openSync|File\.open|File\.new)"
_WRITES_TO = (
    r"(?:appendFileSync|writeFileSync|appendFile|writeFile|file_put_contents|createWriteStream|File\.write|IO\.write|"
    r"write_file|append_to_file)"
)
_MOVES_TO = (
    r"(?:shutil\.(?:copy2?|copyfile|copytree|move)|os\.(?:replace|rename|symlink|link)|copyFileSync|copyFile|"
    r"renameSync|symlinkSync|linkSync|FileUtils\.(?:cp|mv|ln_s|ln)|File\.(?:rename|symlink|link)|\bcopy|\brename)"
)
_MODE_STR = r"""['"][rbt]*[wax+][rwabxt+]{0,3}['"]"""  # a mode that writes: 'w', 'a', 'r+', 'wb', 'x' …
_MODE = r"\s*,\s*(?:mode\s*[=:]\s*)?" + _MODE_STR
_CODE_WRITES = deferred(
    r"\b" + _OPENS + r"\s*\(\s*(?:file\s*=\s*)?" + _LITERAL.format(q=r"\1") + _MODE
    + r"|\b" + _WRITES_TO + r"\s*\(\s*" + _LITERAL.format(q=r"\3")
    + r"|\bPath\s*\(\s*" + _LITERAL.format(q=r"\5")
    + r"\s*\)(?:\s*\.\s*(?:expanduser|resolve|absolute)\(\))*\s*\.\s*(?:write_text|write_bytes|open\s*\(\s*"
    + r"(?:mode\s*=\s*)?" + _MODE_STR + ")"
    + r"|\bos\.open\s*\(\s*" + _LITERAL.format(q=r"\7") + r"\s*,[^;)]{0,120}O_(?:WRONLY|RDWR|APPEND|CREAT|TRUNC)"
    + r"|" + _MOVES_TO + r"\s*\(\s*[^,;()]{1,200},\s*" + _LITERAL.format(q=r"\9")
)  # fmt: skip
# A start-up file joined to the home directory where a call writes it (red team 47: reading one and writing another
# file is no write of it): open(os.path.expanduser('~/.bashrc'), 'a'), (Path.home() / '.local' / 'bin' / 'x')
# .write_text(…), fs.appendFileSync(process.env.HOME + '/.bashrc', …), File.open("#{Dir.home}/.bashrc", "a"),
# shutil.copy('x', os.path.join(os.path.expanduser('~'), '.bashrc')): the literals after the home, joined.
_HOME = (
    r"(?:os\.path\.expanduser|\bexpanduser|File\.expand_path|Path\.home\(\)|\bhomedir\(\)|process\.env\.HOME\b|"
    r"os\.environ(?:\.get\(|\[)['\"]HOME['\"]|getenv\(['\"]HOME['\"]\)|Dir\.home|ENV\[['\"]HOME['\"]\]|\$ENV\{HOME\}|"
    r"Path\(['\"]~|\$_SERVER\[['\"]HOME['\"]\])"
)
_HOME_WRITES = deferred(
    r"\b" + _OPENS + r"\s*\(\s*(?:file\s*=\s*)?(?P<a>[^,;]{0,40}" + _HOME + r"[^;]{0,120}?)" + _MODE
    + r"|\b" + _WRITES_TO + r"\s*\(\s*(?P<b>[^,;]{0,40}" + _HOME + r"[^;]{0,120}?['\"])\s*[,)]"
    + r"|(?P<c>" + _HOME + r"[^;]{0,120}?['\"]\s*\)*)(?:\s*\.\s*(?:expanduser|resolve|absolute)\(\))*\s*\.\s*"
    + r"(?:write_text|write_bytes|open\s*\(\s*(?:mode\s*=\s*)?" + _MODE_STR + ")"
    + r"|" + _MOVES_TO + r"\s*\(\s*[^,;()]{1,200},\s*(?P<d>[^,;]{0,40}" + _HOME + r"[^;]{0,120}?['\"])\s*[,)]"
)  # fmt: skip
_HOME_AT = deferred(_HOME)
_PART = deferred(r"""['"]([^'"]*)['"]|\}([^'"{}]*)['"]""")
# Perl's open for writing: open(F, ">>PATH"), open(my $f, ">>", "PATH"), with $ENV{HOME} for the home.
_PERL_OPENS = deferred(
    r"""\bopen\s*\(?\s*(?:my\s+)?\$?\w+\s*,\s*['"](?:\+?>>?|\+<)\s*(?:['"]\s*,\s*(?:glob\(\s*)?['"])?([^'"]+)['"]"""
)


def code_writes(code: str) -> list[str]:
    """The files interpreter code writes by a literal path, and the start-up files it writes in the home directory."""
    found = [next(g for g in m.groups()[1::2] if g) for m in _CODE_WRITES.finditer(code) if any(m.groups()[1::2])]
    for match in _HOME_WRITES.finditer(code):
        span = next(g for g in match.group("a", "b", "c", "d") if g)
        after = span[_HOME_AT.search(span).end() :]  # type: ignore[union-attr]
        parts = [p for quoted, interpolated in _PART.findall(after) for p in (quoted or interpolated,) if p]
        parts = [p for p in parts if p not in ("~", "HOME", "/")]
        if parts:
            found.append("~/" + "/".join(part.strip("/") for part in parts if part.strip("/")).lstrip("~/"))
    for match in _PERL_OPENS.finditer(code):
        found.append(re.sub(r"^\$ENV\{HOME\}", "~", match.group(1).strip()))
    return [path for path in found if path]


# A literal that is only the start of the string handed over: concatenated (+, ., ..), formatted (%, .format, an
# f-string with a field, ${…} in a template).
# (a literal right after another is one argument: Python's and C's `"echo hi;" " rm …"`, red team 105 F3)
_JOINED = deferred(r"\s*(?:\+|%|\.\s*format\b|\.\.|\.\s*(?:concat\b|['\"$])|\.\s+\$|[rRbBuUfF]{0,2}['\"])")


# A command line joined from a list at run time: Python's `' '.join([...])` handed to os.system or subprocess with
# shell=True (the separator is the literal `_CODE_RUNS` finds), JavaScript's `[...].join(' ')` handed to execSync:
# the line itself where every item and the separator are literals, else built at run time.
_SEPARATOR_JOINS = deferred(r"\s*\.\s*join\s*\(\s*(\[)?")
_LIST_RUNS = deferred(
    r"\b(?:system|popen|execSync|exec|spawnSync|shell_exec|passthru|run|call|check_output|check_call|getoutput|"
    r"getstatusoutput|Popen)\s*\(\s*(?:\(\s*){0,4}\["
)
_NAME_JOINED = deferred(
    r"\b(?:system|popen|execSync|exec|spawnSync|shell_exec|passthru|getoutput|getstatusoutput)\s*\(\s*(?:\(\s*){0,4}"
    r"[\w.$]+(?:\[[\w.$]*\])?\s*\.\s*join\s*\("
)
_JOINS_WITH = deferred(r"""\]\s*\.\s*join\s*\(\s*(?:(['"])((?:\\.|(?!\1)[^\\])*)\1\s*)?\)""")


# A literal's escapes as Python and JavaScript read them. Threat (red team 103 F4): `" ".join(["echo", "\\x3b rm …"])`
# hands `; rm …` to the shell; read with its escapes kept, the line was one harmless `echo`. (Where a language keeps
# them, Perl's or PHP's single quotes, decoding only makes the line judged stricter.)
_ESCAPE = deferred(
    r"\\([xu]\{[0-9a-fA-F]{1,6}\}|N\{[^}\n]{1,80}\}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)", re.S
)
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\n": ""}


def _unescaped(found: re.Match[str]) -> str:
    escape = found.group(1)
    if escape.startswith("N{"):  # Python's `\N{SEMICOLON}`, Perl's `\N{U+3B}` (red team 105 F3)
        name = escape[2:-1]
        with contextlib.suppress(KeyError, ValueError):
            return chr(int(name[2:], 16)) if name.upper().startswith("U+") else unicodedata.lookup(name)
        return found.group(0)
    if escape[0] in "xuU" and len(escape) > 1:
        point = int(escape[1:].strip("{}"), 16)
        return chr(point) if point <= 0x10FFFF else found.group(0)
    if escape[0] in "01234567":
        return chr(int(escape, 8))
    return _ESCAPED.get(escape, escape)


def _literal(text: str) -> str:
    return _ESCAPE.sub(_unescaped, text) if "\\" in text else text


_ALL_LITERALS = deferred(r"""\s*(?:(['"])(?:\\.|(?!\1)[^\\])*\1\s*,\s*)*(['"])(?:\\.|(?!\2)[^\\])*\2\s*,?\s*""")


def _listed(inside: str) -> list[str] | None:
    """The items of a list's text where every one is a literal (not `require('os').homedir()`), else None."""
    if not _ALL_LITERALS.fullmatch(inside):
        return None
    return [_literal(item) for _, item in _ITEMS.findall(inside)]


# What may follow a joined line for it to be the whole argument: the runner's call closing, or its next argument
# (``shell=True``). Anything else (``+ '; …'``, ``.replace(…)``) makes the line another one at run time.
_ARGUMENT_ENDS = deferred(r"\s*(?:\)|,)")


def _list_end(code: str, begin: int) -> int:
    """Where the list whose items start at ``begin`` closes: its ``]`` outside every literal and inner list (red
    team 102 F5: ``['x]', '; rm …']`` was cut at the first ``]``); -1 where it does not close."""
    depth, quote, at = 0, "", begin
    while at < len(code):
        char = code[at]
        if quote:
            at += 2 if char == "\\" else 1
            quote = "" if char == quote else quote
            continue
        if char in "'\"`":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            if depth == 0:
                return at
            depth -= 1
        at += 1
    return -1


def _handed(code: str, found: re.Match[str]) -> Inner:
    """What a literal handed to a call that runs a command line is: the line, or built at run time."""
    text, end = found.group(2), found.end()
    if not text and code.startswith(found.group(1), end):  # a triple-quoted literal: `os.system("""…""")`
        end = code.find(found.group(1) * 3, end + 1)
        if end < 0:
            return BUILT
        text, end = code[found.end() + 1 : end], end + 3
    # Parentheses around the literal: `os.system(("…"))` hands it, JavaScript's `execSync(("a", "…"))` hands the
    # last operand, Python's `run(("rm", "-rf", p))` an argv: the literal is the line only where they close on it.
    extra = max(0, code.count("(", _opens_from(code, found), found.start(1)) - 1)
    if joins := _SEPARATOR_JOINS.match(code, end):
        close = _list_end(code, joins.end()) if joins.group(1) else -1
        items = _listed(code[joins.end() : close]) if close >= 0 else None
        ended = re.compile(r"\]\s*\)").match(code, close) if close >= 0 else None
        whole = ended is not None and _closes(code, ended.end(), extra)
        return _literal(text).join(items) if items is not None and whole else BUILT
    if extra and not _closes(code, end, extra):
        return BUILT
    return BUILT if _built(code, found, end) else _literal(text)


def _opens_from(code: str, found: re.Match[str]) -> int:
    """Where the parentheses (and spaces) right before ``found``'s literal begin (past a string prefix: `r"…"`)."""
    at = found.start(1)
    while at > found.start() and at > found.start(1) - 2 and code[at - 1] in "rRbBuUfF":
        at -= 1
    while at > found.start() and code[at - 1] in " \t\n(":
        at -= 1
    return at


def _closes(code: str, at: int, extra: int) -> bool:
    """Whether ``extra`` parentheses close at ``at`` and the argument ends there."""
    closed = re.compile(r"(?:\s*\)){" + str(extra) + "}").match(code, at)
    return closed is not None and _ARGUMENT_ENDS.match(code, closed.end()) is not None


def _joined(code: str, _close: int, begin: int) -> Inner:
    """A list handed on as ``[...].join(sep)``: its line where all is literal and the join is the whole argument,
    else built at run time (a method between the list and the join, more after it: red team 102 F5); None where the
    list is not joined (an argv: ``_ARGV_LISTS``)."""
    close = _list_end(code, begin)
    if close < 0:
        return BUILT
    joins = _JOINS_WITH.match(code, close)
    if joins is None:
        return BUILT if re.compile(r"\]\s*\.").match(code, close) else None
    items = _listed(code[begin:close])
    opens = begin - 1  # (the list's `[`: the parentheses before it, as ``_handed`` counts them)
    while opens > 0 and code[opens - 1] in " \t\n(":
        opens -= 1
    whole = _closes(code, joins.end(), max(0, code.count("(", opens, begin) - 1))
    return _literal(joins.group(2)).join(items) if items is not None and joins.group(1) and whole else BUILT


def _built(code: str, found: re.Match[str], end: int) -> bool:
    """Threat: ``os.system('r'+'m -r'+'f ~')``: a command line built from strings at run time, whose literal start
    (``r``) says nothing of what runs (held-out corpus, issue 45): only run time knows it."""
    prefix = code[max(0, found.start(2) - 2) : found.start(2) - 1]
    return (
        bool(_JOINED.match(code, end))
        or (prefix in ("f", "F") and "{" in found.group(2))
        or ("${" in found.group(2) or "#{" in found.group(2))
    )


# subprocess.run(["git", "push", "--force"]), execFileSync("rm", ["-rf", …]) is handled as its literals above only
# when written as a string; a list of literals is the argv itself.
_ARGV_LISTS = deferred(
    r"\b(?:run|call|check_call|check_output|Popen|spawn|spawnSync|execFile|execFileSync|execv|execvp|system)\s*\(\s*\["
)
# Deleting the home directory by name: shutil.rmtree(os.path.expanduser("~")), rm_rf(Dir.home), rmSync(homedir()).
_HOME_DELETES = deferred(
    r"\b(?:rmtree|rm_rf|rm_r|remove_dir_all|rmSync|rimraf|rmdir|removedirs|deleteRecursively)\s*\(?\s*(?:"
    r"os\.path\.expanduser\(\s*['\"]~['\"]\s*\)|(?:pathlib\.)?Path\.home\(\)|os\.environ\[['\"]HOME['\"]\]|"
    r"os\.getenv\(['\"]HOME['\"]\)|(?:require\(['\"]os['\"]\)|os)\.homedir\(\)|homedir\(\)|Dir\.home|ENV\[['\"]HOME['\"]\]|"
    r"\$ENV\{HOME\}|\$HOME\b)"
    r"|\brm\s*\(\s*homedir\(\)|Remove-Item\b[^;\n]*\s(?:~|\$HOME|\$env:USERPROFILE)(?:\s|$)"
)
_KILLS_ALL = deferred(r"\b(?:os\.kill|process\.kill|Process\.kill|kill)\s*\(?\s*-1\b")
_OPENS_DEVICE = deferred(
    r"""\bopen\s*\(?\s*(?:\w+\s*,\s*)?['"]\+?[>]*\s*(/dev/(?:sd|hd|vd|nvme|xvd|mmcblk|disk/)[^'"]*)['"]"""
)
_CODE_DELETES = deferred(
    r"""\b(?:rmtree|rm_rf|rm_r|remove_dir_all|removedirs|rmSync|rimraf|remove|unlink|unlinkSync|rmdir|rmdirSync|"""
    r"""delete|deleteRecursively)\s*\(?\s*(['"])((?:\\.|(?!\1)[^\\])+)\1"""
)


def program_text_runs(program: str, text: str) -> list[Inner] | None:
    """What a script of ``program``'s own language runs (the commands in it, as for its options): awk's system(),
    sed's e, make's recipes and $(shell …), m4's syscmd. None: a language this module cannot read."""
    if program in ("awk", "gawk", "mawk", "nawk"):
        return [awk_runs(text)]
    if program == "sed":
        return [sed_runs(text)]
    if program in ("make", "gmake", "bmake"):
        recipes = [line[1:] for line in text.splitlines() if line.startswith("\t")]
        shells = re.findall(r"\$\(shell\s+([^)]*)\)", text)
        dynamic = "$(" in "".join(recipes).replace("$(shell", "") or "${" in "".join(recipes)
        return [*recipes, *shells, *([DYNAMIC] if dynamic else [])]
    if program in ("sqlite3", "sqlite"):
        return [*re.findall(r"(?m)^\s*\.(?:shell|system)\s+(.+)$", text),
                *re.findall(r"(?m)^\s*\.(?:once|output)\s+\|\s*(.+)$", text)]  # fmt: skip
    if program in ("ed", "red"):
        return re.findall(r"(?m)^\s*(?:[\d,.$;+-]*\s*(?:w|r|e|W)?\s*)?!(.+)$", text)
    if program in ("gdb", "cgdb"):
        runs: list[Inner] = [*re.findall(r"(?m)^\s*(?:shell|she|!)\s*(.+)$", text)]
        runs += [m for m in re.findall(r"(?m)^\s*(?:pipe|\|).*?\|\s*(.+)$", text)]
        if re.search(r"(?m)^\s*(?:python|py|pi|guile|gu|source|so)\b", text):
            runs.append(DYNAMIC)
        return runs
    if program in ("psql", "mysql", "mariadb"):
        return [*re.findall(r"(?m)\\!\s*(.+)$", text), *re.findall(r"(?mi)^\s*system\s+(.+)$", text),
                *re.findall(r"(?m)\\[og]\s*\|\s*(.+)$", text),
                *re.findall(r"(?i)\bprogram\s+'([^']*)'", text)]  # fmt: skip
    if program in ("sftp", "ftp", "lftp"):
        return re.findall(r"(?m)^\s*!(.+)$", text)
    if program in ("expect", "tclsh", "wish"):
        found = re.findall(r"\b(?:exec|spawn|system)\s+([^;\n\]]+)", text)
        return [*found, *([DYNAMIC] if re.search(r"\b(?:eval|uplevel|open\s+\|)", text) else [])]
    if program == "dc":
        return re.findall(r"!([^\n]+)", text)
    if program == "duckdb":
        return re.findall(r"(?m)^\s*\.(?:sh|shell|system)\s+(.+)$", text)
    if program in ("gnuplot", "smbclient", "octave", "maxima", "bc"):
        found = re.findall(r"(?m)^\s*!(.+)$", text) + re.findall(r"\bsystem\s*\(?\s*[\"']([^\"']+)[\"']", text)
        return [*found, *([DYNAMIC] if program != "bc" and re.search(r"\bsystem\s*\(?\s*[^\"'\s]", text) else [])]
    if program == "lldb":
        lldb_runs: list[Inner] = [*re.findall(r"(?m)^\s*(?:platform\s+shell|shell)\s+(.+)$", text)]
        return lldb_runs + ([DYNAMIC] if re.search(r"(?m)^\s*(?:script|command\s+script)\b", text) else [])
    if program == "m4":
        found = re.findall(r"\b(?:esyscmd|syscmd)\s*\(([^)]*)\)", text)
        return [*found, *([DYNAMIC] if re.search(r"\b(?:esyscmd|syscmd)\b", text) and not found else [])]
    return None
