#!/bin/sh
# test-man.sh - the manual pages made at build time (man/meson.build) against the help
# they come from: there is a page for the command, for every command `tiercache
# --help` lists and for the plugin; each renders without a warning (groff -ww, or
# man --warnings when groff is absent); and the OPTIONS sections of each page name
# every option the OPTIONS sections of its --help list (for the plugin: every key of
# its config_help; for tiercache(1): --help and --version).
. "$(dirname "$0")/lib.sh"
: "${TC_MAN_DIR:?TC_MAN_DIR must name the folder of the built pages (run through meson test)}"
cd "$T"

# render PAGE: the page as plain text on stdout; any warning fails the test.
if command -v groff >/dev/null 2>&1; then
	render() {
		groff -man -Tutf8 -ww -P-cbou "$1" >page.txt 2>warn.txt ||
			fail "$1: groff exited $?: $(cat warn.txt)"
		[ ! -s warn.txt ] || fail "$1: groff warns: $(cat warn.txt)"
		cat page.txt
	}
elif command -v man >/dev/null 2>&1; then
	render() {
		MANWIDTH=80 man -l --warnings -E UTF-8 "$1" 2>warn.txt | sed 's/.\x08//g' >page.txt ||
			fail "$1: man -l failed: $(cat warn.txt)"
		[ ! -s warn.txt ] || fail "$1: man warns: $(cat warn.txt)"
		cat page.txt
	}
else
	echo "SKIP: neither groff nor man is installed (groff-base, man-db)" >&2
	exit 77
fi

# sections TITLE... : the lines of the sections with these titles, from text on stdin
# laid out with titles in column 0 (--help output and rendered pages alike).
sections() {
	awk -v want="$*" '
		BEGIN { n = split(want, w, ","); }
		/^[A-Z][A-Z ]*$/ { on = 0; for (i = 1; i <= n; i++) if ($0 == w[i]) on = 1; next }
		on { print }'
}

# options: every -x / --long-option word on stdin, one a line, sorted.
options() {
	grep -oE '(^|[^A-Za-z0-9_-])--?[A-Za-z][A-Za-z0-9-]*' | sed 's/^[^-]*//' |
		sed 's/-$//' | LC_ALL=C sort -u
}

# The commands the main help lists, each with its page.
tc --help >main-help.txt
cmds=$(sed -n '/^Commands:/,/^$/p' main-help.txt | awk 'NR > 1 && NF { print $1 }')
[ -n "$cmds" ] || fail "tiercache --help lists no commands: $(cat main-help.txt)"
pages="tiercache nbdkit-tiercache-plugin"
for c in $cmds; do
	pages="$pages tiercache-$c"
done
for p in $pages; do
	[ -f "$TC_MAN_DIR/$p.1" ] || fail "no page $p.1 in $TC_MAN_DIR (add the command to man/meson.build)"
done
n=$(ls "$TC_MAN_DIR"/*.1 | wc -l)
[ "$n" -eq "$(echo $pages | wc -w)" ] ||
	fail "$TC_MAN_DIR holds $n pages, expected $(echo $pages | wc -w): $(ls "$TC_MAN_DIR")"

# check_options PAGE-TEXT HELP-OPTIONS: every option of the second file is in the
# page's OPTIONS sections.
check_options() {
	sections "OPTIONS,COMMON OPTIONS" <"$1" | options >page-opts.txt
	missing=$(LC_ALL=C comm -23 "$2" page-opts.txt | tr '\n' ' ')
	[ -z "$missing" ] || fail "$3: the page's OPTIONS lack: $missing"
}

for c in $cmds; do
	tc "$c" --help >help.txt
	sections "OPTIONS,COMMON OPTIONS" <help.txt | options >help-opts.txt
	[ -s help-opts.txt ] || fail "tiercache $c --help lists no options"
	render "$TC_MAN_DIR/tiercache-$c.1" >text.txt
	grep -q "^NAME" text.txt && grep -q "^SYNOPSIS" text.txt && grep -q "^DESCRIPTION" text.txt &&
		grep -q "^SEE ALSO" text.txt || fail "tiercache-$c.1 lacks a section: $(cat text.txt)"
	check_options text.txt help-opts.txt "tiercache-$c.1"
done

render "$TC_MAN_DIR/tiercache.1" >text.txt
printf '%s\n' --help --version >want.txt
check_options text.txt want.txt tiercache.1
for c in $cmds; do
	grep -q "tiercache-$c(1)" text.txt || fail "tiercache.1 does not point to tiercache-$c(1)"
done

render "$TC_MAN_DIR/nbdkit-tiercache-plugin.1" >text.txt
nbdkit "$TC_NBDKIT_PLUGIN" --help 2>/dev/null | sed -n '/^plugin: /,$p' |
	grep -oE '^[a-z_]+=' | LC_ALL=C sort -u >want.txt
[ -s want.txt ] || fail "nbdkit $TC_NBDKIT_PLUGIN --help lists no parameters"
sections OPTIONS <text.txt | grep -oE '^ *[a-z_]+=' | tr -d ' ' | LC_ALL=C sort -u >have.txt
missing=$(LC_ALL=C comm -23 want.txt have.txt | tr '\n' ' ')
[ -z "$missing" ] || fail "nbdkit-tiercache-plugin.1 lacks the parameters: $missing"

log "$(echo $pages | wc -w) pages render without warnings and list every option"
