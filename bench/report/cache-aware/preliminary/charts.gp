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
plot for [c=2:9] 'hit-rate.dat' using c:xtic(1) title columnheader(c)
set style data lines
set yrange [*:*]
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
plot 'replicas-w6-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w6-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w6-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w6-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w6-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
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
plot 'replicas-w6-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w6-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w6-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w6-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w6-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
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
plot 'replicas-w6-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w6-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w6-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w6-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w6-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
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
plot 'replicas-w1-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w1-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w1-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
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
plot 'replicas-w1-prefix_hash.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w1-prefix_hash.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-prefix_hash.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-prefix_hash.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w1-prefix_hash.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-prefix_hash.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
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
plot 'replicas-w1-kv_aware.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-kv_aware.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w1-kv_aware.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-kv_aware.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-kv_aware.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w1-kv_aware.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
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
plot 'replicas-w1-cost_model.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w1-cost_model.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-cost_model.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-cost_model.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w1-cost_model.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-cost_model.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
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
