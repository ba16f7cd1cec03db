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
plot for [c=2:5] 'p99-ttft.dat' using c:xtic(1) title columnheader(c)
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
plot for [c=2:5] 'hit-rate.dat' using c:xtic(1) title columnheader(c)
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
plot 'ttft-cdf-w1.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w1.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w1.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w1.dat' index 3 with steps lw 2 title 'p2c'
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
plot 'replicas-w1-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w1-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w1-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
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
plot 'replicas-w1-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w1-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w1-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w1-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w1-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w1-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
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
plot 'ttft-cdf-w2.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w2.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w2.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w2.dat' index 3 with steps lw 2 title 'p2c'
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
plot 'replicas-w2-round_robin.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w2-round_robin.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w2-round_robin.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-round_robin.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w2-round_robin.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w2-round_robin.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
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
plot 'replicas-w2-random.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w2-random.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w2-random.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-random.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w2-random.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w2-random.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
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
plot 'replicas-w2-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w2-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w2-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w2-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w2-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
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
plot 'replicas-w2-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w2-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w2-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w2-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w2-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w2-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
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
plot 'ttft-cdf-w4.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w4.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w4.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w4.dat' index 3 with steps lw 2 title 'p2c'
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
plot 'replicas-w4-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w4-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w4-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-1'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w4-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w4-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w4-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-1'
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
plot 'replicas-w4-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w4-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w4-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w4-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w4-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w4-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
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
plot 'ttft-cdf-w5.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w5.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w5.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w5.dat' index 3 with steps lw 2 title 'p2c'
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
plot 'replicas-w5-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w5-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w5-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w5-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w5-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w5-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
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
plot 'ttft-cdf-w6.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w6.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w6.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w6.dat' index 3 with steps lw 2 title 'p2c'
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
plot 'replicas-w6-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-3', 'replicas-w6-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w6-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-2'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w6-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-3', 'replicas-w6-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w6-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-2'
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
plot 'ttft-cdf-w3.dat' index 0 with steps lw 2 title 'round_robin', 'ttft-cdf-w3.dat' index 1 with steps lw 2 title 'random', 'ttft-cdf-w3.dat' index 2 with steps lw 2 title 'least_request', 'ttft-cdf-w3.dat' index 3 with steps lw 2 title 'p2c'
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
plot 'replicas-w3-least_request.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w3-least_request.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w3-least_request.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w3-least_request.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w3-least_request.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w3-least_request.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
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
plot 'replicas-w3-p2c.dat' index 0 using 1:2 with steps lw 1.5 title 'sim-2', 'replicas-w3-p2c.dat' index 1 using 1:2 with steps lw 1.5 title 'sim-1', 'replicas-w3-p2c.dat' index 2 using 1:2 with steps lw 1.5 title 'sim-3'
set title 'requests sent (cumulative)'
set xlabel 'time (s)'
plot 'replicas-w3-p2c.dat' index 0 using 1:3 with steps lw 1.5 title 'sim-2', 'replicas-w3-p2c.dat' index 1 using 1:3 with steps lw 1.5 title 'sim-1', 'replicas-w3-p2c.dat' index 2 using 1:3 with steps lw 1.5 title 'sim-3'
unset multiplot
