# Names the tests that started and never ended in Swift Testing's output (read from stdin or the
# files given): after the run was stopped at its time limit, these are the ones that hung.
unlockit_unfinished_tests() {
    awk '
        function name(line,    rest) {
            rest = substr(line, index(line, "Test ") + 5)
            if (substr(rest, 1, 1) == "\"") return substr(rest, 1, index(substr(rest, 2), "\"") + 1)
            return substr(rest, 1, index(rest, ")"))
        }
        /^◇ Test (case|run) / { next }
        /^◇ Test .* started\.$/ { started[++count] = name($0); next }
        /^[^ ]+ Test .* (passed|failed) after / { ended[name($0)] = 1 }
        END { for (i = 1; i <= count; i++) if (!(started[i] in ended)) print "  " started[i] }
    ' "$@"
}
