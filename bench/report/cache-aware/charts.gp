# Written by inferrail-bench report; run `gnuplot charts.gp` in this folder.
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'p99-ttft.svg'
set title 'p99 TTFT per policy and workload'
set ylabel 'ms'
set xlabel ''
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
plot for [c=2:9] 'p99-ttft.dat' using c:xtic(1) title columnheader(c)
set style data lines
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'hit-rate.svg'
set title 'Prefix hit rate per policy and workload (usage)'
set ylabel 'cached / prompt tokens'
set xlabel ''
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
plot for [c=2:9] 'hit-rate.dat' using c:xtic(1) title columnheader(c), 'hit-rate.dat' skip 1 using 0:10 with points pt 9 ps 1.5 lc rgb 'black' title 'reuse ceiling'
set style data lines
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'capacity.svg'
set title 'Capacity: highest rate with p99 TTFT and p99 TPOT within the SLO'
set ylabel 'requests/s'
set xlabel ''
set style fill solid 0.8 border -1
set boxwidth 0.6
set yrange [0:*]
set xtics rotate by -30
plot 'capacity.dat' using 0:2:xtic(1) with boxes notitle
set xtics norotate
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'ttft-cdf-w1.svg'
set title 'TTFT CDF, w1'
set logscale x
set xlabel 'TTFT (ms, from the scheduled time)'
set ylabel 'share of requests'
set yrange [0:1]
plot 'ttft-cdf-w1.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w1.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w1.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w1.dat' index 3 with steps lw 2 title 'p2c', 'ttft-cdf-w1.dat' index 4 with steps lw 2 title 'prefix_hash', 'ttft-cdf-w1.dat' index 5 with steps lw 2 title 'kv_aware', 'ttft-cdf-w1.dat' index 6 with steps lw 2 title 'cost_model', 'ttft-cdf-w1.dat' index 7 with steps lw 2 title 'sglang_cache_aware'
unset logscale x
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w1-round_robin.svg'
set multiplot layout 2,1 title 'Per replica over time, w1, round_robin (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w1-round_robin.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w1-round_robin.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-round_robin.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-round_robin.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w1-round_robin.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-round_robin.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w1-random.svg'
set multiplot layout 2,1 title 'Per replica over time, w1, random (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w1-random.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w1-random.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w1-random.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-random.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w1-random.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w1-random.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w1-least_request.svg'
set multiplot layout 2,1 title 'Per replica over time, w1, least_request (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w1-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w1-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w1-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w1-p2c.svg'
set multiplot layout 2,1 title 'Per replica over time, w1, p2c (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w1-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w1-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w1-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w1-prefix_hash.svg'
set multiplot layout 2,1 title 'Per replica over time, w1, prefix_hash (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w1-prefix_hash.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w1-prefix_hash.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w1-prefix_hash.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-prefix_hash.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w1-prefix_hash.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w1-prefix_hash.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w1-kv_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w1, kv_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w1-kv_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w1-kv_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-kv_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-kv_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w1-kv_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-kv_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w1-cost_model.svg'
set multiplot layout 2,1 title 'Per replica over time, w1, cost_model (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w1-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w1-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w1-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w1-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w1-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w1-sglang_cache_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w1, sglang_cache_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w1-sglang_cache_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w1-sglang_cache_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-sglang_cache_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-sglang_cache_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w1-sglang_cache_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-sglang_cache_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'ttft-cdf-w2.svg'
set title 'TTFT CDF, w2'
set logscale x
set xlabel 'TTFT (ms, from the scheduled time)'
set ylabel 'share of requests'
set yrange [0:1]
plot 'ttft-cdf-w2.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w2.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w2.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w2.dat' index 3 with steps lw 2 title 'p2c', 'ttft-cdf-w2.dat' index 4 with steps lw 2 title 'prefix_hash', 'ttft-cdf-w2.dat' index 5 with steps lw 2 title 'kv_aware', 'ttft-cdf-w2.dat' index 6 with steps lw 2 title 'cost_model', 'ttft-cdf-w2.dat' index 7 with steps lw 2 title 'sglang_cache_aware'
unset logscale x
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w2-round_robin.svg'
set multiplot layout 2,1 title 'Per replica over time, w2, round_robin (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w2-round_robin.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w2-round_robin.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w2-round_robin.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-round_robin.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w2-round_robin.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w2-round_robin.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w2-random.svg'
set multiplot layout 2,1 title 'Per replica over time, w2, random (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w2-random.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w2-random.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w2-random.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-random.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w2-random.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w2-random.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w2-least_request.svg'
set multiplot layout 2,1 title 'Per replica over time, w2, least_request (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w2-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w2-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w2-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w2-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w2-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w2-p2c.svg'
set multiplot layout 2,1 title 'Per replica over time, w2, p2c (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w2-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w2-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w2-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w2-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w2-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w2-prefix_hash.svg'
set multiplot layout 2,1 title 'Per replica over time, w2, prefix_hash (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w2-prefix_hash.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w2-prefix_hash.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w2-prefix_hash.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-prefix_hash.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w2-prefix_hash.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w2-prefix_hash.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w2-kv_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w2, kv_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w2-kv_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w2-kv_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w2-kv_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-kv_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w2-kv_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w2-kv_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w2-cost_model.svg'
set multiplot layout 2,1 title 'Per replica over time, w2, cost_model (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w2-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w2-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w2-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w2-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w2-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w2-sglang_cache_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w2, sglang_cache_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w2-sglang_cache_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w2-sglang_cache_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w2-sglang_cache_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-sglang_cache_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w2-sglang_cache_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w2-sglang_cache_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'ttft-cdf-w3.svg'
set title 'TTFT CDF, w3'
set logscale x
set xlabel 'TTFT (ms, from the scheduled time)'
set ylabel 'share of requests'
set yrange [0:1]
plot 'ttft-cdf-w3.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w3.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w3.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w3.dat' index 3 with steps lw 2 title 'p2c', 'ttft-cdf-w3.dat' index 4 with steps lw 2 title 'prefix_hash', 'ttft-cdf-w3.dat' index 5 with steps lw 2 title 'kv_aware', 'ttft-cdf-w3.dat' index 6 with steps lw 2 title 'cost_model', 'ttft-cdf-w3.dat' index 7 with steps lw 2 title 'sglang_cache_aware'
unset logscale x
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w3-round_robin.svg'
set multiplot layout 2,1 title 'Per replica over time, w3, round_robin (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w3-round_robin.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w3-round_robin.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w3-round_robin.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w3-round_robin.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w3-round_robin.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w3-round_robin.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w3-random.svg'
set multiplot layout 2,1 title 'Per replica over time, w3, random (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w3-random.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w3-random.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w3-random.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w3-random.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w3-random.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w3-random.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w3-least_request.svg'
set multiplot layout 2,1 title 'Per replica over time, w3, least_request (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w3-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w3-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w3-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w3-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w3-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w3-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w3-p2c.svg'
set multiplot layout 2,1 title 'Per replica over time, w3, p2c (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w3-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w3-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w3-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w3-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w3-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w3-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w3-prefix_hash.svg'
set multiplot layout 2,1 title 'Per replica over time, w3, prefix_hash (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w3-prefix_hash.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w3-prefix_hash.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w3-prefix_hash.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w3-prefix_hash.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w3-prefix_hash.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w3-prefix_hash.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w3-kv_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w3, kv_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w3-kv_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w3-kv_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w3-kv_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w3-kv_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w3-kv_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w3-kv_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w3-cost_model.svg'
set multiplot layout 2,1 title 'Per replica over time, w3, cost_model (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w3-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w3-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w3-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w3-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w3-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w3-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w3-sglang_cache_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w3, sglang_cache_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w3-sglang_cache_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w3-sglang_cache_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w3-sglang_cache_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w3-sglang_cache_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w3-sglang_cache_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w3-sglang_cache_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'ttft-cdf-w4.svg'
set title 'TTFT CDF, w4'
set logscale x
set xlabel 'TTFT (ms, from the scheduled time)'
set ylabel 'share of requests'
set yrange [0:1]
plot 'ttft-cdf-w4.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w4.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w4.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w4.dat' index 3 with steps lw 2 title 'p2c', 'ttft-cdf-w4.dat' index 4 with steps lw 2 title 'prefix_hash', 'ttft-cdf-w4.dat' index 5 with steps lw 2 title 'kv_aware', 'ttft-cdf-w4.dat' index 6 with steps lw 2 title 'cost_model', 'ttft-cdf-w4.dat' index 7 with steps lw 2 title 'sglang_cache_aware'
unset logscale x
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w4-round_robin.svg'
set multiplot layout 2,1 title 'Per replica over time, w4, round_robin (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w4-round_robin.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w4-round_robin.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w4-round_robin.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w4-round_robin.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w4-round_robin.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w4-round_robin.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w4-random.svg'
set multiplot layout 2,1 title 'Per replica over time, w4, random (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w4-random.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w4-random.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w4-random.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w4-random.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w4-random.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w4-random.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w4-least_request.svg'
set multiplot layout 2,1 title 'Per replica over time, w4, least_request (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w4-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w4-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w4-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w4-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w4-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w4-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w4-p2c.svg'
set multiplot layout 2,1 title 'Per replica over time, w4, p2c (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w4-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w4-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w4-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w4-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w4-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w4-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w4-prefix_hash.svg'
set multiplot layout 2,1 title 'Per replica over time, w4, prefix_hash (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w4-prefix_hash.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w4-prefix_hash.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w4-prefix_hash.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w4-prefix_hash.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w4-kv_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w4, kv_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w4-kv_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w4-kv_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w4-kv_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w4-kv_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w4-kv_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w4-kv_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w4-cost_model.svg'
set multiplot layout 2,1 title 'Per replica over time, w4, cost_model (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w4-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w4-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w4-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w4-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w4-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w4-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w4-sglang_cache_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w4, sglang_cache_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w4-sglang_cache_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w4-sglang_cache_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w4-sglang_cache_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w4-sglang_cache_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w4-sglang_cache_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w4-sglang_cache_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'ttft-cdf-w5.svg'
set title 'TTFT CDF, w5'
set logscale x
set xlabel 'TTFT (ms, from the scheduled time)'
set ylabel 'share of requests'
set yrange [0:1]
plot 'ttft-cdf-w5.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w5.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w5.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w5.dat' index 3 with steps lw 2 title 'p2c', 'ttft-cdf-w5.dat' index 4 with steps lw 2 title 'prefix_hash', 'ttft-cdf-w5.dat' index 5 with steps lw 2 title 'kv_aware', 'ttft-cdf-w5.dat' index 6 with steps lw 2 title 'cost_model', 'ttft-cdf-w5.dat' index 7 with steps lw 2 title 'sglang_cache_aware'
unset logscale x
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w5-round_robin.svg'
set multiplot layout 2,1 title 'Per replica over time, w5, round_robin (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w5-round_robin.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w5-round_robin.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w5-round_robin.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w5-round_robin.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w5-round_robin.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w5-round_robin.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w5-random.svg'
set multiplot layout 2,1 title 'Per replica over time, w5, random (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w5-random.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w5-random.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w5-random.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w5-random.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w5-random.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w5-random.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w5-least_request.svg'
set multiplot layout 2,1 title 'Per replica over time, w5, least_request (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w5-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w5-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w5-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w5-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w5-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w5-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w5-p2c.svg'
set multiplot layout 2,1 title 'Per replica over time, w5, p2c (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w5-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w5-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w5-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w5-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w5-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w5-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w5-prefix_hash.svg'
set multiplot layout 2,1 title 'Per replica over time, w5, prefix_hash (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w5-prefix_hash.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w5-prefix_hash.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w5-prefix_hash.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w5-prefix_hash.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w5-prefix_hash.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w5-prefix_hash.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w5-kv_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w5, kv_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w5-kv_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w5-kv_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w5-kv_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w5-kv_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w5-kv_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w5-kv_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w5-cost_model.svg'
set multiplot layout 2,1 title 'Per replica over time, w5, cost_model (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w5-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w5-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w5-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w5-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w5-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w5-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w5-sglang_cache_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w5, sglang_cache_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w5-sglang_cache_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w5-sglang_cache_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w5-sglang_cache_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w5-sglang_cache_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w5-sglang_cache_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w5-sglang_cache_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'ttft-cdf-w6.svg'
set title 'TTFT CDF, w6'
set logscale x
set xlabel 'TTFT (ms, from the scheduled time)'
set ylabel 'share of requests'
set yrange [0:1]
plot 'ttft-cdf-w6.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w6.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w6.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w6.dat' index 3 with steps lw 2 title 'p2c', 'ttft-cdf-w6.dat' index 4 with steps lw 2 title 'prefix_hash', 'ttft-cdf-w6.dat' index 5 with steps lw 2 title 'kv_aware', 'ttft-cdf-w6.dat' index 6 with steps lw 2 title 'cost_model', 'ttft-cdf-w6.dat' index 7 with steps lw 2 title 'sglang_cache_aware'
unset logscale x
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w6-round_robin.svg'
set multiplot layout 2,1 title 'Per replica over time, w6, round_robin (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w6-round_robin.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w6-round_robin.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w6-round_robin.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-round_robin.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w6-round_robin.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w6-round_robin.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w6-random.svg'
set multiplot layout 2,1 title 'Per replica over time, w6, random (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w6-random.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w6-random.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w6-random.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-random.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w6-random.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w6-random.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w6-least_request.svg'
set multiplot layout 2,1 title 'Per replica over time, w6, least_request (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w6-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w6-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w6-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w6-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w6-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w6-p2c.svg'
set multiplot layout 2,1 title 'Per replica over time, w6, p2c (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w6-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w6-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w6-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w6-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w6-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w6-prefix_hash.svg'
set multiplot layout 2,1 title 'Per replica over time, w6, prefix_hash (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w6-prefix_hash.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w6-prefix_hash.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w6-prefix_hash.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-prefix_hash.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w6-prefix_hash.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w6-prefix_hash.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w6-kv_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w6, kv_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w6-kv_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w6-kv_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w6-kv_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-kv_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w6-kv_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w6-kv_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w6-cost_model.svg'
set multiplot layout 2,1 title 'Per replica over time, w6, cost_model (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w6-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w6-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w6-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w6-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w6-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-w6-sglang_cache_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, w6, sglang_cache_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-w6-sglang_cache_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w6-sglang_cache_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w6-sglang_cache_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-sglang_cache_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w6-sglang_cache_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w6-sglang_cache_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'ttft-cdf-llmd-shared-prefix.svg'
set title 'TTFT CDF, llmd-shared-prefix'
set logscale x
set xlabel 'TTFT (ms, from the scheduled time)'
set ylabel 'share of requests'
set yrange [0:1]
plot 'ttft-cdf-llmd-shared-prefix.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-llmd-shared-prefix.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-llmd-shared-prefix.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-llmd-shared-prefix.dat' index 3 with steps lw 2 title 'p2c', 'ttft-cdf-llmd-shared-prefix.dat' index 4 with steps lw 2 title 'prefix_hash', 'ttft-cdf-llmd-shared-prefix.dat' index 5 with steps lw 2 title 'kv_aware', 'ttft-cdf-llmd-shared-prefix.dat' index 6 with steps lw 2 title 'cost_model', 'ttft-cdf-llmd-shared-prefix.dat' index 7 with steps lw 2 title 'sglang_cache_aware'
unset logscale x
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-llmd-shared-prefix-round_robin.svg'
set multiplot layout 2,1 title 'Per replica over time, llmd-shared-prefix, round_robin (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-llmd-shared-prefix-round_robin.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-llmd-shared-prefix-round_robin.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-round_robin.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-llmd-shared-prefix-round_robin.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-llmd-shared-prefix-round_robin.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-round_robin.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-llmd-shared-prefix-random.svg'
set multiplot layout 2,1 title 'Per replica over time, llmd-shared-prefix, random (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-llmd-shared-prefix-random.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-llmd-shared-prefix-random.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-random.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-llmd-shared-prefix-random.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-llmd-shared-prefix-random.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-random.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-llmd-shared-prefix-least_request.svg'
set multiplot layout 2,1 title 'Per replica over time, llmd-shared-prefix, least_request (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-llmd-shared-prefix-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-llmd-shared-prefix-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-llmd-shared-prefix-p2c.svg'
set multiplot layout 2,1 title 'Per replica over time, llmd-shared-prefix, p2c (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-llmd-shared-prefix-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-llmd-shared-prefix-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-llmd-shared-prefix-prefix_hash.svg'
set multiplot layout 2,1 title 'Per replica over time, llmd-shared-prefix, prefix_hash (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-llmd-shared-prefix-prefix_hash.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-prefix_hash.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-llmd-shared-prefix-prefix_hash.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-llmd-shared-prefix-prefix_hash.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-prefix_hash.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-llmd-shared-prefix-prefix_hash.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-llmd-shared-prefix-kv_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, llmd-shared-prefix, kv_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-llmd-shared-prefix-kv_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-kv_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-kv_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-llmd-shared-prefix-kv_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-kv_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-kv_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-llmd-shared-prefix-cost_model.svg'
set multiplot layout 2,1 title 'Per replica over time, llmd-shared-prefix, cost_model (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-llmd-shared-prefix-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-llmd-shared-prefix-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-llmd-shared-prefix-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-llmd-shared-prefix-sglang_cache_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, llmd-shared-prefix, sglang_cache_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-llmd-shared-prefix-sglang_cache_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-llmd-shared-prefix-sglang_cache_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-sglang_cache_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-llmd-shared-prefix-sglang_cache_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-llmd-shared-prefix-sglang_cache_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-llmd-shared-prefix-sglang_cache_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'ttft-cdf-sglang-gsp.svg'
set title 'TTFT CDF, sglang-gsp'
set logscale x
set xlabel 'TTFT (ms, from the scheduled time)'
set ylabel 'share of requests'
set yrange [0:1]
plot 'ttft-cdf-sglang-gsp.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-sglang-gsp.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-sglang-gsp.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-sglang-gsp.dat' index 3 with steps lw 2 title 'p2c', 'ttft-cdf-sglang-gsp.dat' index 4 with steps lw 2 title 'prefix_hash', 'ttft-cdf-sglang-gsp.dat' index 5 with steps lw 2 title 'kv_aware', 'ttft-cdf-sglang-gsp.dat' index 6 with steps lw 2 title 'cost_model', 'ttft-cdf-sglang-gsp.dat' index 7 with steps lw 2 title 'sglang_cache_aware'
unset logscale x
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-sglang-gsp-round_robin.svg'
set multiplot layout 2,1 title 'Per replica over time, sglang-gsp, round_robin (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-sglang-gsp-round_robin.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-round_robin.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-sglang-gsp-round_robin.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-sglang-gsp-round_robin.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-round_robin.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-sglang-gsp-round_robin.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-sglang-gsp-random.svg'
set multiplot layout 2,1 title 'Per replica over time, sglang-gsp, random (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-sglang-gsp-random.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-random.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-sglang-gsp-random.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-sglang-gsp-random.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-random.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-sglang-gsp-random.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-sglang-gsp-least_request.svg'
set multiplot layout 2,1 title 'Per replica over time, sglang-gsp, least_request (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-sglang-gsp-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-sglang-gsp-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-sglang-gsp-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-sglang-gsp-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-sglang-gsp-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-sglang-gsp-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-sglang-gsp-p2c.svg'
set multiplot layout 2,1 title 'Per replica over time, sglang-gsp, p2c (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-sglang-gsp-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-sglang-gsp-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-sglang-gsp-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-sglang-gsp-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-sglang-gsp-prefix_hash.svg'
set multiplot layout 2,1 title 'Per replica over time, sglang-gsp, prefix_hash (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-sglang-gsp-prefix_hash.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-prefix_hash.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-sglang-gsp-prefix_hash.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-sglang-gsp-prefix_hash.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-prefix_hash.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-sglang-gsp-prefix_hash.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-sglang-gsp-kv_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, sglang-gsp, kv_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-sglang-gsp-kv_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-sglang-gsp-kv_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-kv_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-sglang-gsp-kv_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-sglang-gsp-kv_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-kv_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-sglang-gsp-cost_model.svg'
set multiplot layout 2,1 title 'Per replica over time, sglang-gsp, cost_model (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-sglang-gsp-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-sglang-gsp-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-sglang-gsp-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-sglang-gsp-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-sglang-gsp-sglang_cache_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, sglang-gsp, sglang_cache_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-sglang-gsp-sglang_cache_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-sglang_cache_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-sglang-gsp-sglang_cache_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-sglang-gsp-sglang_cache_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-sglang-gsp-sglang_cache_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-sglang-gsp-sglang_cache_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set output 'ttft-cdf-prefix-repetition.svg'
set title 'TTFT CDF, prefix-repetition'
set logscale x
set xlabel 'TTFT (ms, from the scheduled time)'
set ylabel 'share of requests'
set yrange [0:1]
plot 'ttft-cdf-prefix-repetition.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-prefix-repetition.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-prefix-repetition.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-prefix-repetition.dat' index 3 with steps lw 2 title 'p2c', 'ttft-cdf-prefix-repetition.dat' index 4 with steps lw 2 title 'prefix_hash', 'ttft-cdf-prefix-repetition.dat' index 5 with steps lw 2 title 'kv_aware', 'ttft-cdf-prefix-repetition.dat' index 6 with steps lw 2 title 'cost_model', 'ttft-cdf-prefix-repetition.dat' index 7 with steps lw 2 title 'sglang_cache_aware'
unset logscale x
set yrange [*:*]
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-prefix-repetition-round_robin.svg'
set multiplot layout 2,1 title 'Per replica over time, prefix-repetition, round_robin (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-prefix-repetition-round_robin.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-round_robin.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-round_robin.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-prefix-repetition-round_robin.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-round_robin.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-round_robin.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-prefix-repetition-random.svg'
set multiplot layout 2,1 title 'Per replica over time, prefix-repetition, random (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-prefix-repetition-random.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-random.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-prefix-repetition-random.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-prefix-repetition-random.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-random.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-prefix-repetition-random.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-prefix-repetition-least_request.svg'
set multiplot layout 2,1 title 'Per replica over time, prefix-repetition, least_request (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-prefix-repetition-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-prefix-repetition-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-prefix-repetition-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-prefix-repetition-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-prefix-repetition-p2c.svg'
set multiplot layout 2,1 title 'Per replica over time, prefix-repetition, p2c (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-prefix-repetition-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-prefix-repetition-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-prefix-repetition-prefix_hash.svg'
set multiplot layout 2,1 title 'Per replica over time, prefix-repetition, prefix_hash (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-prefix-repetition-prefix_hash.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-prefix-repetition-prefix_hash.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-prefix_hash.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-prefix-repetition-prefix_hash.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-prefix-repetition-prefix_hash.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-prefix_hash.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-prefix-repetition-kv_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, prefix-repetition, kv_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-prefix-repetition-kv_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-kv_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-kv_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-prefix-repetition-kv_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-kv_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-kv_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-prefix-repetition-cost_model.svg'
set multiplot layout 2,1 title 'Per replica over time, prefix-repetition, cost_model (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-prefix-repetition-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-prefix-repetition-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-prefix-repetition-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
unset multiplot
set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'
set termoption noenhanced
set grid
set key outside right
set terminal svg size 800,600
set output 'replicas-prefix-repetition-sglang_cache_aware.svg'
set multiplot layout 2,1 title 'Per replica over time, prefix-repetition, sglang_cache_aware (repetition 0)'
set title 'in flight'
set xlabel ''
set ylabel 'requests'
plot 'replicas-prefix-repetition-sglang_cache_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-prefix-repetition-sglang_cache_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-sglang_cache_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-prefix-repetition-sglang_cache_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-prefix-repetition-sglang_cache_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-prefix-repetition-sglang_cache_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
unset multiplot
