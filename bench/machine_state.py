"""What the machine did during a Python benchmark, beside its figures (the
C benchmarks report the same through bench_util.h's bench_print_json)."""
import glob


def damon_threads_running():
    """The kernel's DAMON threads that run: their proactive pageout of cold
    memory skews times on these VMs (docs/scaling.md)."""
    return sum(open(p).read().startswith("on")
               for p in glob.glob("/sys/kernel/mm/damon/admin/kdamonds/*/state"))
