# Runtime options of the sanitizer builds (source it): scripts/test.sh
# --sanitize and scripts/fuzz.sh. Full stacks (fast_unwind_on_malloc=0) so
# the suppressions in tests/sanitizers/ see the library frames; UBSan stops
# at its first report.
sanitizer_supp=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/sanitizers" && pwd)
export ASAN_OPTIONS=fast_unwind_on_malloc=0:detect_stack_use_after_return=0
export LSAN_OPTIONS=suppressions=$sanitizer_supp/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Fused kernels built at run time are instrumented as well (they load into
# the instrumented process, whose runtime they use).
export STRATA_JIT_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
