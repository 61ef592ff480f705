"""The syntax tree of a command line walked into the facts the policy decides on (``commands``).

Every simple command is found — in pipelines, lists, subshells, ``{ }``, ``$(…)``, backticks, process substitution,
function bodies, ``if``/``for``/``while``/``case`` — with its words (resolved by ``words``, with the values the line
itself fixes, collected first), its assignments, its redirects and what feeds its stdin (a pipe, a here-document, a
file). Places where bash evaluates a variable's value as code (arithmetic, ``${!x}``, names given to builtins) and
fork bombs are findings. Parsing the text into the tree, and its bounds, is ``parsing``'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mcp_server_guard.patterns import deferred
from mcp_server_guard.shell.strings.assignments import IDENT as _IDENT
from mcp_server_guard.shell.strings.assignments import assignment as _assignment
from mcp_server_guard.shell.strings.assignments import collect as _collect
from mcp_server_guard.shell.strings.assignments import descendants
from mcp_server_guard.shell.strings.commands import Command, Finding, Parsed, Redirect, Word
from mcp_server_guard.shell.strings.words import Known, decode_ansi_c, resolve_word, text_of

if TYPE_CHECKING:
    from tree_sitter import Node

_SIMPLE_BODIES = frozenset({"command", "pipeline", "list", "negated_command", "declaration_command", "unset_command"})
_DYNAMIC_NODES = frozenset(
    {"simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion"}
)
_ARITH_TEST_OPS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
# Threat: a name with a subscript that runs code (`printf -v 'a[$(rm -rf v)]' x`): bash evaluates the
# subscript of a name it is given as arithmetic, and arithmetic expands $(…) and `…`.
# (Time: from the start of a name only, and a subscript up to the next `[`, so no text is scanned twice.)
_CODE_SUBSCRIPT = deferred(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*\[[^\][]*[$`]")
# Builtins that take variable names (and evaluate their subscripts).
_NAME_TAKERS = frozenset(
    {"printf", "read", "unset", "declare", "typeset", "local", "readonly", "export", "mapfile", "readarray",
     "getopts", "test", "[", "let", "wait"}
)  # fmt: skip


def walk_tree(parsed: Parsed, root: Node) -> None:
    """Walk the syntax tree ``root`` of ``parsed.source`` into ``parsed``: its commands, redirects and findings."""
    known = _collect(root)
    parsed.assigned = known.assigned
    _Walker(parsed, known).walk(root)
    if known.declared_integers & known.from_input:
        parsed.evaluates_run_time = True  # `declare -i n; read n`: bash evaluates what is assigned to n


def bash_delimiter(word: str) -> str | None:
    r"""A here-document's delimiter as bash reads the word after ``<<``: its quotes removed (``'…'`` as is, ``"…"``
    and ``$"…"`` with their escapes, ``$'…'`` decoded, ``\x`` outside quotes ``x``); None where it cannot say."""
    out: list[str] = []
    i = 0
    while i < len(word):
        char = word[i]
        if char == "\\":
            out.append(word[i + 1 : i + 2])
            i += 2
        elif word.startswith("$'", i):
            j = i + 2
            while j < len(word) and word[j] != "'":
                j += 2 if word[j] == "\\" else 1
            if j >= len(word):
                return None
            out.append(decode_ansi_c(word[i + 2 : j]))
            i = j + 1
        elif char == "'":
            j = word.find("'", i + 1)
            if j < 0:
                return None
            out.append(word[i + 1 : j])
            i = j + 1
        elif char == '"' or word.startswith('$"', i):
            j = i + (2 if char == "$" else 1)
            part: list[str] = []
            while j < len(word) and word[j] != '"':
                if word[j] == "\\" and word[j + 1 : j + 2] in ("$", "`", '"', "\\"):
                    part.append(word[j + 1])
                    j += 2
                else:
                    part.append(word[j])
                    j += 1
            if j >= len(word):
                return None
            out.append("".join(part))
            i = j + 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _substitutions(node: Node) -> list[Node]:
    """The command and process substitutions anywhere below ``node`` (not below one another: each walks its own)."""
    found: list[Node] = []
    for child in node.named_children:
        if child.type in ("command_substitution", "process_substitution"):
            found.append(child)
        else:
            found += _substitutions(child)
    return found


def _has_dynamic(node: Node) -> bool:
    if node.type in _DYNAMIC_NODES:
        return True
    return any(_has_dynamic(child) for child in node.named_children)


# Variables bash fills in from other values (a match, an option's value, the last argument, the arguments): they
# hold input when the line reads any.
_FILLED = frozenset({"BASH_REMATCH", "OPTARG", "_", "@", "*", "1", "2", "3", "4", "5", "6", "7", "8", "9"})
_OFFSET = deferred(r"\$\{[A-Za-z_0-9@*]+(?:\[[^\]]*\])?:(?![-=?+])(.*)\}$", re.DOTALL)  # ${s:n}, ${s:1:n}
_SUBSCRIPTED = deferred(r"[A-Za-z_][A-Za-z0-9_]*\[(.*)\]\+?=?", re.DOTALL)  # a[n], a[n]=


def _value_taken(name: Node, top: Node) -> bool:
    """In arithmetic ``top``: is the variable's value evaluated (not its length ``${#x}`` or indices ``${!a[@]}``)?"""
    parent = name.parent
    while parent is not None and parent != top:
        text = text_of(parent) if parent.type == "expansion" else ""
        if text.startswith("${#") or (text.startswith("${!") and text.endswith(("[@]}", "[*]}"))):
            return False
        parent = parent.parent
    return True


def _in_double_brackets(node: Node) -> bool:
    """Inside ``[[ … ]]`` (which evaluates -eq's operands as arithmetic), not ``[ … ]``/``test`` (which never do)."""
    parent = node.parent
    while parent is not None and parent.type != "test_command":
        parent = parent.parent
    return parent is not None and bool(parent.children) and text_of(parent.children[0]) == "[["


def _run_time_names(program: str, args: list[Word]) -> bool:
    """Does ``program`` (a builtin that takes variable names) get a name, or an expression, only run time knows?
    `let "$(cat)"`, `printf -v "$l" x`, `read "$l"`, `test -v "$l"`, `declare "$l"`, `unset "$l"`."""
    values = [w.value for w in args]
    if program == "let":
        return None in values
    if program in ("printf", "test", "[", "wait"):
        flag = "-p" if program == "wait" else "-v"  # printf -v NAME, test -v NAME, wait -p NAME
        attached = any(w.value is None and w.raw.startswith(flag) for w in args)  # printf -v"$l"
        following = any(v == flag and i + 1 < len(values) and values[i + 1] is None for i, v in enumerate(values))
        return attached or following
    if program == "read":
        taking = False
        for value in values:
            if taking:
                taking = False
            elif value is None:
                return True
            elif value.startswith("-"):
                taking = value[-1] in "adinNptu"  # an option whose value follows (-p PROMPT, -u FD, -a NAME …)
        return False
    return program in ("declare", "typeset", "local", "readonly", "export", "unset") and None in values


def _arithmetic_parts(node: Node) -> Iterator[Node]:
    """The nodes of an arithmetic expression, not entering command substitutions or a loop's body."""
    for child in node.children:
        if child.type in ("command_substitution", "process_substitution", "do_group", "compound_statement"):
            continue
        yield child
        yield from _arithmetic_parts(child)


class _Walker:
    def __init__(self, parsed: Parsed, known: Known) -> None:
        self.parsed = parsed
        self.known = known

    def _word(self, node: Node) -> Word:
        return resolve_word(node, self.known)

    def _evaluated(self, names: Iterator[str] | list[str], where: str) -> None:
        """Variables bash evaluates as arithmetic or as a name: their value is code when it holds $(…)."""
        for name in names:
            code = self.known.code_in(name)
            filled = name in _FILLED and (self.known.from_input or self.known.substitutes)
            if name in self.known.from_input or filled:
                self.parsed.evaluates_run_time = True
            if code is None:
                self.parsed.evaluated_from_env.add(name)
            elif code:
                self.parsed.findings.append(
                    Finding("code-in-data", f"{where} evaluates ${name}, whose value can run commands")
                )
                self.parsed.evaluated_code += [w.value for w in self.known.assigned[name] if w and w.value]

    def _arithmetic(self, node: Node, where: str) -> None:
        if any(n.type == "command_substitution" for n in descendants(node)) or "`" in text_of(node):
            self.parsed.evaluates_run_time = True  # `(( $(cat) ))`: what the substitution prints is evaluated
        names: list[str] = []
        for part in _arithmetic_parts(node):
            if part.type in ("variable_name", "special_variable_name") and _value_taken(part, node):
                names.append(text_of(part))  # `$(( $* ))`: special ones too (bash fills them from input)
            elif part.type == "expansion" and self.known.from_input and _value_taken(part, node):
                if text_of(part).startswith("${!"):
                    self.parsed.evaluates_run_time = True  # `$((${!ref}))`: whatever ref names, input too
            elif part.type == "word":
                names += [m.group() for m in _IDENT.finditer(text_of(part))]
            elif part.type in ("raw_string", "string") and where == "[[ … -eq … ]]":
                # `[[ 'a[$(rm -rf ~)]' -eq 1 ]]`: a quoted operand is evaluated as arithmetic, and the $(…) of a
                # subscript in it runs (red team 21): judged as the code it is; one only run time knows, undecidable.
                value = self._word(part).value
                if value is None:
                    self.parsed.evaluates_run_time = True
                elif "[" in value or "$" in value or "`" in value:
                    self.parsed.evaluated_code.append(value)
        self._evaluated(names, where)

    def walk(self, node: Node, piped: bool = False) -> None:
        kind = node.type
        if kind == "ERROR" or node.is_missing:
            self.parsed.findings.append(Finding("parse-error", f"cannot parse near {text_of(node)[:40]!r}"))
        if kind in ("command", "declaration_command", "unset_command"):
            self._command(node, piped)
            return
        if kind == "pipeline":
            previous: Command | None = None
            for index, child in enumerate(node.named_children):
                before = len(self.parsed.commands)
                self.walk(child, piped=piped or index > 0)
                if len(self.parsed.commands) > before:
                    self.parsed.commands[-1].upstream = previous
                    previous = self.parsed.commands[-1]
            return
        if kind == "redirected_statement":
            self._redirected(node, piped)
            return
        if kind == "function_definition":
            self._function(node)
        if kind == "file_redirect":
            self._redirect(node)
            return
        if kind == "herestring_redirect":
            return  # handled by the command that owns it
        self._code_in_data(node)
        if kind == "variable_assignment":
            name, word = _assignment(node)
            if node.parent is not None and node.parent.type != "command":
                self._name_argument(name, "an assignment")
            self._code_in_value(name, word)
            if word.prompt_expansion:
                self.parsed.findings.append(Finding("prompt-expansion", f"{name}=${{…@P}} expands a value as a prompt"))
        for child in node.named_children:
            self.walk(child, piped)

    def _code_in_value(self, name: str, word: Word) -> None:
        """Threat: `y='a[$(rm -rf ~)]'; x=y; echo $((x))` — a value that holds a command substitution runs it
        wherever bash evaluates the value as code, through any number of names (arithmetic, a subscript,
        ``printf -v``/``test -v``): not decidable before running."""
        if word.value is not None and CODE_IN_VALUE.search(word.value):
            self.parsed.findings.append(
                Finding("code-in-data", f"the value of {name} holds a command substitution bash may evaluate")
            )

    def _code_in_data(self, node: Node) -> None:
        """Threat: places where bash evaluates a variable's value as code — arithmetic (`$((x))`, `((x))`,
        `for ((…))`, `[[ $x -eq 0 ]]`, subscripts), indirection (`${!x}`) and names given to builtins."""
        kind = node.type
        if kind in ("arithmetic_expansion", "c_style_for_statement"):
            self._arithmetic(node, "arithmetic")
        elif kind == "compound_statement" and node.children and text_of(node.children[0]) == "((":
            self._arithmetic(node, "(( ))")
        elif (
            kind == "binary_expression"
            and _in_double_brackets(node)
            and any(c.type == "test_operator" and text_of(c) in _ARITH_TEST_OPS for c in node.children)
        ):
            self._arithmetic(node, "[[ … -eq … ]]")
        elif kind == "unary_expression" and any(text_of(c) == "-v" for c in node.children):
            for operand in node.named_children[1:]:
                self._name_argument(text_of(operand), "[[ -v ]]")
                if _has_dynamic(operand):
                    self.parsed.evaluates_run_time = True  # `[[ -v $l ]]`: a name only run time knows
        elif kind == "expansion":
            text = text_of(node)
            offset = _OFFSET.match(text)
            if offset:  # ${s:n}, ${s:1:n}: offset and length are arithmetic
                self._evaluated([m.group() for m in _IDENT.finditer(offset.group(1))], "a substring offset")
            if text.startswith("${!") and not text.endswith(("[@]}", "[*]}")):  # ${!a[@]}: a's indices, numbers
                self._evaluated([m.group() for m in _IDENT.finditer(text[3:])][:1], "${!…}")
            for sub in (c for c in node.named_children if c.type == "subscript"):
                index = sub.named_children[1:] if len(sub.named_children) > 1 else []
                for part in index:
                    self._arithmetic(part, "an array subscript")
                    if part.type == "word":
                        self._evaluated([m.group() for m in _IDENT.finditer(text_of(part))], "an array subscript")

    def _name_argument(self, value: str | None, where: str) -> None:
        subscript = _SUBSCRIPTED.match(value or "")
        if subscript:  # `a[n]=3`, `unset a[n]`: the subscript is arithmetic
            self._evaluated([m.group() for m in _IDENT.finditer(subscript.group(1))], where)
        if value is not None and _CODE_SUBSCRIPT.search(value):
            self.parsed.evaluated_code.append(value)
            self.parsed.findings.append(
                Finding("code-in-data", f"{where} is given the name {value!r}, whose subscript runs commands")
            )

    def _command(self, node: Node, piped: bool) -> None:
        words: list[Word] = []
        command = Command(words=words, text=text_of(node), piped=piped)
        if node.type in ("declaration_command", "unset_command") and node.children:
            keyword = text_of(node.children[0])  # declare/local/export/…: a keyword token, not a named node
            words.append(Word(keyword, keyword))
        for child in node.named_children:
            kind = child.type
            if kind == "command_name":
                words.append(self._word(child.named_children[0]) if child.named_children else Word("", ""))
                self._nested(child)
            elif kind == "variable_assignment":
                name, value = _assignment(child, self.known)
                command.assignments.append((name, value))
                self._code_in_value(name, value)
                if value.prompt_expansion:
                    self.parsed.findings.append(
                        Finding("prompt-expansion", f"{name}=${{…@P}} expands a value as a prompt")
                    )
                self._name_argument(name, "an assignment")
                if any(w.value == "-n" for w in words):  # declare -n ref=NAME: NAME is evaluated as a name
                    self._name_argument(value.value, "a name reference")
                self._nested(child)  # A=$(rm …) runs rm
            elif kind == "file_redirect":
                self._redirect(child, command)
            elif kind == "herestring_redirect":
                body = child.named_children[-1] if child.named_children else None
                _drop_descriptor(words, child)  # `bash 0<<< '…'`: 0 is the descriptor, not a script
                if body is not None:
                    word = self._word(body)
                    command.stdin_text, command.stdin_dynamic = word.value, word.value is None
                    self._nested(body)
            else:
                words.append(self._word(child))
                self._nested(child)
        program = words[0].value if words else None
        if program in _NAME_TAKERS:
            for word in words[1:]:
                self._name_argument(word.value, program)
            if _run_time_names(program, words[1:]):
                self.parsed.evaluates_run_time = True
            if program == "let":
                self._evaluated([m.group() for w in words[1:] for m in _IDENT.finditer(w.value or "")], "let")
        self.parsed.commands.append(command)

    def _nested(self, node: Node) -> None:
        """Commands inside a word: $(…), `…`, <(…); and arithmetic inside it that evaluates variables."""
        self._code_in_data(node)
        if node.type in ("command_substitution", "process_substitution"):
            for inner in node.named_children:
                self.walk(inner)
            return
        if node.type == "expansion" and "`" in text_of(node):
            # Threat: echo ${x:-`rm -rf ~`} - bash runs backticks inside ${...}, which tree-sitter keeps as text.
            for inner in re.findall(r"`((?:\\.|[^`\\])*)`", text_of(node)):
                self.parsed.evaluated_code.append(f"$({inner})")
        for child in node.named_children:
            self._nested(child)

    def _redirected(self, node: Node, piped: bool) -> None:
        body = node.child_by_field_name("body") or (node.named_children[0] if node.named_children else None)
        before = len(self.parsed.commands)
        simple = body is not None and body.type in _SIMPLE_BODIES
        for child in node.named_children:
            owner = self.parsed.commands[-1] if simple and len(self.parsed.commands) > before else None
            if child is body:
                self.walk(child, piped)
            elif child.type == "heredoc_redirect":
                self._heredoc(child, owner)
            elif child.type == "herestring_redirect":
                word = self._word(child.named_children[-1]) if child.named_children else Word(None, "")
                if owner is not None:
                    _drop_descriptor(owner.words, child)
                    owner.stdin_text, owner.stdin_dynamic = word.value, word.value is None
                for extra in child.named_children[1:]:
                    self._extra_word(extra, owner)
            elif child.type == "file_redirect":
                # Bash attaches `a && b >o c` to `b`, the last simple command of the statement; a compound
                # statement takes no words after a redirection (bash: syntax error), so none are owned there.
                self._redirect(child, owner)
            else:
                self.walk(child, piped)

    def _heredoc(self, node: Node, owner: Command | None) -> None:
        quoted = False
        body_text: str | None = None
        dynamic = False
        # `<<-` strips each body line's leading tabs before anything reads it (red team 14 F3)
        tabs = any(not c.is_named and text_of(c) == "<<-" for c in node.children)
        delimiter: str | None = None
        for child in node.named_children:
            if child.type == "heredoc_start":
                quoted = any(q in text_of(child) for q in ("'", '"', "\\"))
                delimiter = bash_delimiter(text_of(child))
            elif child.type == "heredoc_end" and delimiter is not None and text_of(child).lstrip("\t") != delimiter:
                delimiter = None  # the parser ended the body at another line than bash would
            elif child.type == "heredoc_body":
                body_text = text_of(child)
                if tabs:
                    body_text = "\n".join(line.lstrip("\t") for line in body_text.split("\n"))
                dynamic = not quoted and _has_dynamic(child)
                if not quoted:
                    # Every substitution an unquoted body expands runs, however deep (`${x:-$(cmd)}`); a backquote
                    # the parser does not read in a body makes the body undecidable (red team 14 F5).
                    for inner in _substitutions(child):
                        for cmd in inner.named_children:
                            self.walk(cmd)
                    if "`" in body_text.replace("\\`", ""):
                        self.parsed.findings.append(Finding("parse-error", "a backquote in a here-document's body"))
                        dynamic = True
            elif child.type in ("pipeline", "command", "redirected_statement", "list"):
                # `cat <<EOF | sh`: the rest of the pipeline hangs off the here-doc node.
                self.walk(child, piped=True)
            elif child.type == "file_redirect":
                self._redirect(child, owner)
            elif child.type not in ("heredoc_end", "file_descriptor"):
                # `cat <<EOF -n y`: -n and y are cat's arguments; the descriptor of `3<<EOF` is none (it made
                # `sh 3<<'EOF' <&3` the line `sh 3`, a script file, and its body unjudged: red team 15 F4)
                self._extra_word(child, owner)
        # Threat: a body that ends where bash does not (a delimiter bash reads without its quotes, `E''OF`, `$"EOF"`,
        # `'E\F'`): a command after bash's end taken for data (red team 14 F2, 15 F1-F3). Where the parser's end is
        # not bash's, or a line of the body is bash's end, what runs is not known.
        lines = (body_text or "").split("\n")
        if delimiter is None or delimiter in (line.lstrip("\t") if tabs else line for line in lines):
            self.parsed.findings.append(Finding("parse-error", "a here-document whose end bash finds elsewhere"))
            dynamic = True
        descriptor = next((text_of(c) for c in node.children if c.type == "file_descriptor"), "0")
        if owner is not None and descriptor == "0":  # (`3<<EOF` is another descriptor's, not stdin)
            owner.stdin_text, owner.stdin_dynamic = (None if dynamic else body_text), dynamic

    def _redirect(self, node: Node, owner: Command | None = None) -> None:
        op = ""
        fd: str | None = None
        target: Word | None = None
        before = node.prev_sibling
        if (
            owner is not None
            and owner.words
            and owner.words[-1].raw.isdigit()
            and before is not None
            and before.end_byte == node.start_byte
        ):
            # `sh 0<&1`: digits written against a redirection are its file descriptor (bash), not a word of the
            # command — tree-sitter files them as a word, which made `0` a script for the shell.
            fd = owner.words.pop().raw
        for child in node.children:
            if child.type == "file_descriptor":
                fd = text_of(child)
            elif not child.is_named:
                op = text_of(child)
            elif target is None:
                target = self._word(child)
                self._nested(child)
            else:
                # Threat: `rm 2>/dev/null -rf ~`. tree-sitter files the words after a redirection's target
                # under the redirection; bash passes them to the command. Losing them hid `-rf`.
                self._extra_word(child, owner)
        if op == "<" and fd in (None, "0") and owner is not None:
            owner.stdin_file = True
        if op == "<&" and fd in (None, "0") and owner is not None and target is not None and target.value != "0":
            # `sh 3<<'EOF' <&3`: stdin copied from another descriptor is not known here, as a file's is not (red
            # team 15 F4)
            owner.stdin_text, owner.stdin_dynamic, owner.stdin_file = None, False, True
        if target is not None and op not in (">&", "<&", ">&-", "<&-"):
            self.parsed.redirects.append(Redirect(op, target, fd))
        elif target is not None and target.value is not None and not target.value.isdigit() and target.value != "-":
            # `>& file` is bash for `&> file`.
            self.parsed.redirects.append(Redirect("&>", target, fd))

    def _extra_word(self, node: Node, owner: Command | None) -> None:
        if owner is None:
            self.parsed.findings.append(
                Finding(
                    "parse-error", f"a word after a redirection has no command to belong to: {text_of(node)[:40]!r}"
                )
            )
        else:
            owner.words.append(self._word(node))
        self._nested(node)

    def _function(self, node: Node) -> None:
        name_node = node.child_by_field_name("name") or (node.named_children[0] if node.named_children else None)
        if name_node is None:
            return
        name = text_of(name_node)
        body = node.child_by_field_name("body") or node.named_children[-1]
        calls_itself = any(cmd.type == "command_name" and text_of(cmd) == name for cmd in descendants(body))
        spawns = any(n.type == "pipeline" or (not n.is_named and text_of(n) == "&") for n in descendants(body))
        if calls_itself and spawns:
            self.parsed.findings.append(Finding("fork-bomb", f"function {name!r} spawns copies of itself"))


CODE_IN_VALUE = deferred(r"\$\(|`|[<>]\(")  # what runs a command where bash evaluates a value as code


def _drop_descriptor(words: list[Word], redirect: Node) -> None:
    """Digits written against a redirection (`0<<<`, `0<&1`) are its file descriptor: not a word of the command."""
    before = redirect.prev_sibling
    if words and words[-1].raw.isdigit() and before is not None and before.end_byte == redirect.start_byte:
        words.pop()
