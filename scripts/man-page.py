#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""man-page.py - turn a program's --help text into a man page (roff, on stdout).

Usage:
  man-page.py --page NAME --version V [--commands C1,C2,...] -- PROGRAM ARGS...
  man-page.py --page NAME --version V --plugin -- nbdkit PLUGIN.so --help

Runs PROGRAM ARGS (normally `tiercache CMD --help`) and converts what it prints, so a
page says exactly what --help says, wherever the text lives in the sources.  Three
layouts are understood:

  * a subcommand's help: sections whose titles stand in column 0 (NAME, SYNOPSIS,
    DESCRIPTION, OPTIONS, ..., EXIT STATUS), bodies indented 4 spaces.  In a body,
    a line "TERM  text" (TERM an option, or one word) starts a definition whose
    text continues on the lines indented to its text column; "- " starts a list
    item; other lines are prose (filled); lines indented further are kept as they
    are (examples, addresses), and EXAMPLES is kept as it is.
  * the main help ("Usage: ...", "Commands:" and a list of "NAME  summary").
  * with --plugin, `nbdkit PLUGIN --help`: the part after its "plugin: NAME (LONG
    NAME)" line: the path, the description, then "key=VALUE  text" lines.

--commands names the subcommands that have pages of their own (tiercache-NAME(1)):
each becomes an entry of SEE ALSO where the text mentions `tiercache NAME`.  Exits
1 with a message when the program fails or prints nothing recognisable.
"""
import argparse
import re
import subprocess
import sys

OPTION_SECTIONS = ("OPTIONS", "ENVIRONMENT", "COMMON OPTIONS")


def esc(text):
    """Roff-escape running text: backslashes, hyphens, a leading period or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text[:1] in (".", "'"):
        text = "\\&" + text
    return text


def term_roff(term):
    """A definition's term: option words bold, the rest as written."""
    out = []
    for word in term.split(" "):
        m = re.match(r"^(-[-A-Za-z0-9]*)(.*)$", word)
        if m:
            out.append("\\fB" + esc(m.group(1)) + "\\fR" + esc(m.group(2)))
        else:
            out.append(esc(word))
    return " ".join(out)


def join_lines(lines):
    """Lines of one paragraph as one string; a word split by a hyphen at the end of a
    line ("fault-" / "injection") is joined again."""
    text = ""
    for line in lines:
        line = line.strip()
        if not text:
            text = line
        elif re.search(r"[a-z]-$", text) and re.match(r"^[a-z]", line):
            text += line
        else:
            text += " " + line
    return text


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def text_column(lines, option_section):
    """The column where the definitions' texts start in a section body: the most
    common end of a 2-or-more-space gap after a leading term (an option, or in other
    sections one word, seen at least twice)."""
    counts = {}
    for line in lines:
        m = re.match(r"^(\S(?:.*?\S)?)( {2,})\S", line)
        if m and ((option_section and line.startswith("-")) or " " not in m.group(1)):
            col = len(m.group(1)) + len(m.group(2))
            counts[col] = counts.get(col, 0) + 1
    if not option_section:
        counts = {c: n for c, n in counts.items() if n >= 2}
    return max(counts, key=lambda c: (counts[c], -c)) if counts else None


def split_term(line, col, option_section):
    """(term, text) when @line starts a definition, else None.  In option sections a
    definition is an option or an environment variable, its text at the section's
    text column or after two spaces, or on the next lines; elsewhere one word with
    its text at the section's text column."""
    if not option_section:
        if col and len(line) > col and line[col - 1] == " " and line[col] != " " and \
                line[:col].strip() and " " not in line[:col].strip():
            return line[:col].strip(), line[col:].strip()
        return None
    if not (line.startswith("-") or re.match(r"^[A-Z][A-Z0-9_]+\b", line)):
        return None
    if col and len(line) > col and line[col - 1] == " " and line[col] != " " and \
            line[:col].strip():
        return line[:col].strip(), line[col:].strip()
    m = re.match(r"^(\S(?:.*?\S)?) {2,}(\S.*)$", line)
    if m and ". " not in m.group(1):
        return m.group(1), m.group(2)
    if line.startswith("-"):
        return line.strip(), ""
    return None


class Roff:
    def __init__(self):
        self.out = []

    def emit(self, *lines):
        self.out.extend(lines)

    def pre(self, lines, indent=True):
        base = min(indent_of(l) for l in lines if l.strip())
        if indent:
            self.emit(".RS 4")
        self.emit(".nf")
        for l in lines:
            self.emit(esc(l[base:]) if l.strip() else "")
        self.emit(".fi")
        if indent:
            self.emit(".RE")

    def body(self, lines, option_section=False):
        """A section body (dedented): definitions, list items, prose, kept blocks."""
        col = text_column(lines, option_section)
        i = 0
        prev = None                 # what came before: None (a blank line), "pre", ...
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                prev = None
                continue
            d = split_term(line, col, option_section) if indent_of(line) == 0 else None
            if d:
                term, text = d
                desc = [text] if text else []
                i += 1
                while i < len(lines) and lines[i].strip() and indent_of(lines[i]) > 0:
                    desc.append(lines[i])
                    i += 1
                self.emit(".TP", term_roff(term), esc(join_lines(desc)) if desc else "")
                prev = "def"
                continue
            if line.startswith("- "):
                item = [line[2:]]
                i += 1
                while i < len(lines) and lines[i].strip() and indent_of(lines[i]) >= 2 \
                        and not lines[i].lstrip().startswith("- "):
                    item.append(lines[i])
                    i += 1
                self.emit(".IP \\(bu 2", esc(join_lines(item)))
                prev = "item"
                continue
            if indent_of(line) > 0:
                block = []
                while i < len(lines) and (not lines[i].strip() or indent_of(lines[i]) > 0):
                    if not lines[i].strip() and (i + 1 >= len(lines) or
                                                 indent_of(lines[i + 1]) == 0):
                        break
                    block.append(lines[i])
                    i += 1
                self.pre(block)
                prev = "pre"
                continue
            para = []
            while i < len(lines) and lines[i].strip() and indent_of(lines[i]) == 0 and \
                    not lines[i].startswith("- ") and \
                    not (para and split_term(lines[i], col, option_section)):
                para.append(lines[i])
                i += 1
            # Prose right after a kept block goes on with the same paragraph.
            if prev != "pre":
                self.emit(".PP")
            self.emit(esc(join_lines(para)))
            prev = "prose"

    def text(self):
        return "\n".join(self.out) + "\n"


def header(r, page, version, desc):
    r.emit('.\\" Generated by scripts/man-page.py from the program\'s --help; do not edit.',
           '.TH "%s" 1 "" "tiercache %s" "tiercache manual"' % (page.upper(), version),
           ".nh", ".ad l", ".SH NAME", "%s \\- %s" % (esc(page), esc(desc)))


def see_also(r, refs):
    if refs:
        r.emit(".SH SEE ALSO", ",\n".join("\\fB%s\\fR(%s)" % (esc(n), s) for n, s in refs))


def command_refs(text, commands, page):
    refs = []
    for c in commands:
        name = "tiercache-" + c
        if name != page and re.search(r"tiercache %s\b" % re.escape(c), text):
            refs.append((name, "1"))
    return refs


def sections_of(text):
    """[(TITLE, [body lines dedented by 4])] of a sectioned help text."""
    secs = []
    for line in text.split("\n"):
        if line.strip() and not line.startswith(" "):
            secs.append((line.strip(), []))
        elif secs:
            secs[-1][1].append(line[4:] if line.startswith("    ") else line.strip())
    for _, body in secs:
        while body and not body[-1].strip():
            body.pop()
    return secs


def subcommand_page(text, page, version, commands):
    secs = sections_of(text)
    if not secs or secs[0][0] != "NAME":
        return None
    name_line = join_lines(secs[0][1])
    desc = name_line.split(" - ", 1)[1] if " - " in name_line else name_line
    r = Roff()
    header(r, page, version, desc)
    for title, body in secs[1:]:
        r.emit(".SH " + esc(title))
        if title == "SYNOPSIS" or title == "EXAMPLES":
            r.pre(body, indent=False)
        else:
            r.body(body, option_section=title in OPTION_SECTIONS)
    refs = [("tiercache", "1")] + command_refs(text, commands, page)
    if "nbdkit" in text and page != "nbdkit-tiercache-plugin":
        refs.append(("nbdkit-tiercache-plugin", "1"))
    see_also(r, refs)
    return r.text()


def main_page(text, page, version, commands):
    if not text.startswith("Usage:"):
        return None
    lines = text.rstrip("\n").split("\n")
    usage, i = [], 0
    while i < len(lines) and lines[i].strip():
        usage.append(re.sub(r"^Usage: ", "", lines[i]).strip())
        i += 1
    rest = lines[i:]
    cmd_at = next((k for k, l in enumerate(rest) if l.strip() == "Commands:"), None)
    if cmd_at is None:
        return None
    intro = rest[:cmd_at]
    k = cmd_at + 1
    cmds = []
    while k < len(rest) and rest[k].startswith("  "):
        name, summary = rest[k].strip().split(None, 1)
        cmds.append((name, summary))
        k += 1
    after = rest[k:]
    exit_lines = [l for l in after if l.startswith("Exit status:")]
    after = [l for l in after if not l.startswith("Exit status:")]
    r = Roff()
    header(r, page, version, intro_summary(intro))
    r.emit(".SH SYNOPSIS", ".nf", *[esc(u) for u in usage], ".fi")
    r.emit(".SH DESCRIPTION")
    r.body([l.strip() for l in intro + after])
    r.emit(".SH COMMANDS")
    for name, summary in cmds:
        r.emit(".TP", "\\fB%s\\fR" % esc(name),
               "%s; see \\fBtiercache\\-%s\\fR(1)" % (esc(summary), esc(name)))
    opts = sorted(set(re.findall(r"(?<![\w-])(--?[A-Za-z][-A-Za-z]*)", " ".join(usage))))
    opts = [o for o in opts if o not in ("-",)]
    r.emit(".SH OPTIONS")
    for o in opts:
        what = {"--help": "this text; \\fBtiercache\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR "
                          "prints a command's manual",
                "--version": "the version of tiercache"}.get(o, "see above")
        r.emit(".TP", "\\fB%s\\fR" % esc(o), what)
    if exit_lines:
        r.emit(".SH EXIT STATUS", esc(exit_lines[0].split(":", 1)[1].strip()))
    see_also(r, [("tiercache-" + n, "1") for n, _ in cmds] +
             [("nbdkit-tiercache-plugin", "1")])
    return r.text()


def intro_summary(intro):
    para = join_lines([l for l in intro if l.strip()])
    first = para.split(". ")[0].rstrip(".")
    return re.sub(r"^tiercache ", "", first)


def plugin_page(text, page, version):
    lines = text.rstrip("\n").split("\n")
    at = next((k for k, l in enumerate(lines) if l.startswith("plugin: ")), None)
    if at is None:
        return None
    m = re.match(r"^plugin: (\S+) \((.*)\)$", lines[at])
    longname = m.group(2) if m else lines[at][8:]
    if ": " in longname:
        longname = longname.split(": ", 1)[1]
    body = lines[at + 1:]
    if body and body[0].startswith("("):
        body = body[1:]                  # the plugin's path in this build
    desc = [l for l in body if not re.match(r"^[a-z_]+=", l)]
    params = [l for l in body if re.match(r"^[a-z_]+=", l)]
    r = Roff()
    header(r, page, version, longname)
    syn = "nbdkit [\\fIOPTIONS\\fR] \\fB%s.so\\fR" % esc(page)
    for p in params:
        key = p.split(None, 1)[0]
        req = "required" in p
        syn += " " + ("" if req else "[") + term_roff(key) + ("" if req else "]")
    r.emit(".SH SYNOPSIS", syn)
    r.emit(".SH DESCRIPTION")
    r.body(desc)
    r.emit(".PP", esc("`tiercache serve` starts nbdkit with this plugin; see "
                      "tiercache-serve(1)."))
    r.emit(".SH OPTIONS")
    r.body(params, option_section=False)
    see_also(r, [("tiercache", "1"), ("tiercache-serve", "1"), ("nbdkit", "1")])
    return r.text()


def main():
    ap = argparse.ArgumentParser(description="turn --help output into a man page")
    ap.add_argument("--page", required=True, help="page name, e.g. tiercache-attach")
    ap.add_argument("--version", required=True)
    ap.add_argument("--commands", default="", help="subcommands with pages, comma-separated")
    ap.add_argument("--plugin", action="store_true", help="parse `nbdkit PLUGIN --help`")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.program[1:] if a.program[:1] == ["--"] else a.program
    if not prog:
        sys.exit("man-page.py: no program to run (give it after --)")
    try:
        p = subprocess.run(prog, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        sys.exit("man-page.py: %s: %s" % (prog[0], e))
    if p.returncode != 0:
        sys.exit("man-page.py: `%s` exited %d: %s" % (" ".join(prog), p.returncode,
                                                     p.stderr.strip()))
    commands = [c for c in a.commands.split(",") if c]
    if a.plugin:
        page = plugin_page(p.stdout, a.page, a.version)
    else:
        page = main_page(p.stdout, a.page, a.version, commands) or \
               subcommand_page(p.stdout, a.page, a.version, commands)
    if not page:
        sys.exit("man-page.py: `%s` printed no help text this script knows (NAME ..., "
                 "Usage: ..., or nbdkit's plugin: line)" % " ".join(prog))
    sys.stdout.write(page)


if __name__ == "__main__":
    main()
