# shellcheck shell=bash
# Sourced by the bench-*-plot.sh scripts: a gnuplot histogram with error
# bars (median, least, largest) of a .dat file that starts with
# '#title TEXT' and '#ymax Y' lines.
#   histogram_png DATA PNG WIDTH,HEIGHT YLABEL PLOT-CLAUSES [MORE-SETTINGS]
histogram_png() {
  local data=$1 png=$2 size=$3 ylabel=$4 plot=$5 more=${6:-} title ymax
  title=$(sed -n 's/^#title //p' "$data")
  ymax=$(sed -n 's/^#ymax //p' "$data")
  gnuplot <<EOF
set terminal pngcairo size $size font "sans,11" noenhanced
set output "$png"
set title "$title"
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.75 border -1
set ylabel "$ylabel"
set yrange [0:$ymax]
$more
plot $plot
EOF
  [ -s "$png" ] || { echo "$(basename "$0"): gnuplot wrote no $png" >&2; return 1; }
  echo "$(basename "$0" .sh): $data, $png" >&2
}
