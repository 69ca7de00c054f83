"""A scripted small model for an agent task (SPEC §10): write a file with the best tool offered, then finish.

The choice mirrors what the real CLIs offer: Claude Code's `Write` (absolute `file_path`), Codex's
`apply_patch` (a Responses `custom` tool taking a patch in Codex's format, or a function taking
`{"input": patch}` when a gateway carried it as a function), `local_shell`, and `shell` / `exec_command`
functions (a command array or a command string, per the tool's schema). A request that offers none of them
gets the model's ordinary text answer, so side calls (titles, quota probes) stay harmless.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

import orjson

from modelpool.sim.request import CallRequest, ToolSpec
from modelpool.sim.spec import AgentTask

_WRITE_NAMES = ("write", "write_file", "writefile", "create_file", "write_to_file", "str_replace_based_edit")
# `local_shell` too: a gateway may carry Codex's local_shell tool as a function of that name.
_SHELL_NAMES = (
    "shell",
    "exec_command",
    "bash",
    "shell_command",
    "run_shell_command",
    "run_terminal_cmd",
    "local_shell",
)
_PATH_PROPS = ("file_path", "path", "filename", "file", "target_file", "filepath")
_CONTENT_PROPS = ("content", "contents", "file_text", "text", "data")
_PATCH_PROPS = ("input", "patch")
# Where the CLIs tell the model its working directory: Claude Code's system prompt, Codex's context.
_CWD_PATTERNS = (
    re.compile(r"Working directory:\s*(/[^\s<]*)"),
    re.compile(r"<cwd>\s*(/[^<\s]*)\s*</cwd>"),
    re.compile(r"working in the directory:\s*(/[^\s<]*)"),  # Gemini CLI's session context
)


@dataclass(slots=True, frozen=True)
class ToolCall:
    """The call the agent makes. `payload`: a function's JSON arguments or a custom tool's raw input;
    `command`: a `local_shell` action's argv."""

    kind: str  # function | custom | local_shell
    name: str
    payload: str
    command: tuple[str, ...] = ()


def codex_patch(task: AgentTask) -> str:
    """An apply_patch body in Codex's format that adds the file (or, for an edit, updates it)."""
    body = _patch_lines("+", task.content)
    if task.replaces is not None:
        hunk = _patch_lines("-", task.replaces) + body
        return f"*** Begin Patch\n*** Update File: {task.file}\n@@\n{hunk}*** End Patch"
    return f"*** Begin Patch\n*** Add File: {task.file}\n{body}*** End Patch"


def _patch_lines(sign: str, text: str) -> str:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a trailing newline ends the last line, it is not an extra empty line
    return "".join(f"{sign}{line}\n" for line in lines)


def shell_script(task: AgentTask) -> str:
    write = f"printf %s {shlex.quote(task.content)} > {shlex.quote(task.file)}"
    folder = posixpath.dirname(task.file)
    return f"mkdir -p {shlex.quote(folder)} && {write}" if folder else write


def find_cwd(req: CallRequest) -> str | None:
    for text in req.context_texts():
        for pattern in _CWD_PATTERNS:
            match = pattern.search(text)
            if match:
                return match.group(1).rstrip("/") or "/"
    return None


def choose(task: AgentTask, req: CallRequest) -> ToolCall | None:
    """The file-writing call for this request, or None when it offers no tool that can write."""
    by_kind = [t for t in req.tools if t.kind != "server"]
    for tool in by_kind:
        if tool.kind == "function" and _is_write(tool):
            return _write_call(task, tool, req)
    for tool in by_kind:
        if tool.name == "apply_patch" and tool.kind == "custom":
            return ToolCall("custom", tool.name, codex_patch(task))
    for tool in by_kind:
        if tool.name == "apply_patch" and tool.kind == "function":
            prop = _pick(tool, _PATCH_PROPS, "input", string_only=True)
            return ToolCall("function", tool.name, _json({prop: codex_patch(task)}))
    for tool in by_kind:
        if tool.kind == "local_shell":
            return ToolCall("local_shell", tool.name, "", ("bash", "-lc", shell_script(task)))
    for tool in by_kind:
        if tool.kind == "function" and tool.name.lower() in _SHELL_NAMES:
            return _shell_call(task, tool)
    return None


def _is_write(tool: ToolSpec) -> bool:
    props = tool.properties
    named = tool.name.lower() in _WRITE_NAMES or "write" in tool.name.lower()
    return named and any(p in props for p in _PATH_PROPS) and any(p in props for p in _CONTENT_PROPS)


def _write_call(task: AgentTask, tool: ToolSpec, req: CallRequest) -> ToolCall:
    path_prop = _pick(tool, _PATH_PROPS, "path")
    content_prop = _pick(tool, _CONTENT_PROPS, "content")
    path = task.file
    cwd = find_cwd(req)
    # Claude Code's Write wants an absolute `file_path`; relative paths elsewhere resolve against the cwd.
    if path_prop == "file_path" and cwd is not None and not path.startswith("/"):
        path = posixpath.join(cwd, path)
    return ToolCall("function", tool.name, _json({path_prop: path, content_prop: task.content}))


def _shell_call(task: AgentTask, tool: ToolSpec) -> ToolCall:
    props = tool.properties
    script = shell_script(task)
    for prop in ("command", "cmd"):
        schema = props.get(prop)
        if isinstance(schema, dict):
            value: object = ["bash", "-lc", script] if schema.get("type") == "array" else script
            return ToolCall("function", tool.name, _json({prop: value}))
    return ToolCall("function", tool.name, _json({"command": ["bash", "-lc", script]}))


def _pick(tool: ToolSpec, names: tuple[str, ...], default: str, *, string_only: bool = False) -> str:
    props = tool.properties
    for name in names:
        if name in props:
            return name
    if string_only:  # a function carrying one free-form string: use its (only) string property
        for name, schema in props.items():
            if isinstance(schema, dict) and schema.get("type") == "string":
                return name
    return default


def _json(value: object) -> str:
    return orjson.dumps(value).decode()
