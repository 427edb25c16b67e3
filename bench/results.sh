# Sourced by the bench scripts: replaces one section of bench/RESULTS.md.
#
#   write_section NAME "$section"
#
# NAME's section lies between <!-- NAME:begin --> and <!-- NAME:end -->; it is
# replaced in place, or appended the first time. The file is locked meanwhile:
# other bench scripts rewrite their own sections of it. Needs $RESULTS and a
# scratch directory $WORK.
write_section() {
	local name=$1 section=$2
	printf '%s\n' "$section" >"$WORK/section"
	exec 9<"$RESULTS"
	flock 9
	awk -v f="$WORK/section" -v b="<!-- $name:begin -->" -v e="<!-- $name:end -->" '
	    $0 == b { while ((getline l < f) > 0) print l; skip = 1; done = 1; next }
	    $0 == e { skip = 0; next }
	    !skip   { print }
	    END     { if (!done) { print ""; while ((getline l < f) > 0) print l } }
	' "$RESULTS" >"$WORK/results"
	cat "$WORK/results" >"$RESULTS"
	exec 9<&-
	echo "$(basename "$0"): wrote section '$name' of $RESULTS" >&2
}
