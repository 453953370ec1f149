// The IGSP study's plots as one gnuplot script: retention per set and
// dimension as clustered bars, and the rho table as a heat map.

#include <cmath>

#include "experiments/igsp/igsp_study_internal.h"

namespace clustertwin::experiments::igsp::detail {

std::string gnuplot_script(const std::string& out, const std::vector<std::string>& metrics, double ymax) {
  const std::string q = "'" + out + "/";
  std::string s = "set terminal pngcairo noenhanced size 1400,600 font ',10'\nset datafile separator ','\n";
  // Retention per dimension per set: clustered bars, one cluster per set.
  s += "set output " + q + "retention.png'\n";
  s += "set title 'Retention after 60% SparseGPT pruning, per calibration set (mean over seeds; 100 = dense)'\n"
       "set style data histogram\nset style histogram cluster gap 1\nset style fill solid 0.8 border -1\n"
       "set boxwidth 0.9\nset xtics rotate by -45 scale 0\nset ylabel 'retention (%)'\nset key outside right top\n"
       "set grid ytics\nset arrow from graph 0, first 100 to graph 1, first 100 nohead dt 2\n";
  s += "set yrange [0:" + std::to_string(static_cast<int>(std::ceil(ymax))) + "]\n";
  s += "plot " + q + "retention.csv' every ::1 using 3:xtic(1) title 'general', '' every ::1 using 7 title 'code', " +
       "'' every ::1 using 11 title 'math', '' every ::1 using 15 title 'commonsense', '' every ::1 using 19 title " +
       "'total' lc rgb 'black'\n";
  // The rho heat map: metric x dimension, the value printed in each cell.
  s += "reset\nset terminal pngcairo noenhanced size 900,600 font ',10'\nset datafile separator ','\n";
  s += "set output " + q + "rho_heatmap.png'\n";
  s += "set title \"Spearman's rho over the 15 sources (* Holm p < 0.05; blank: metric constant)\"\n";
  s += "set palette defined (-1 '#2166ac', 0 '#f7f7f7', 1 '#b2182b')\nset cbrange [-1:1]\nset cblabel 'rho'\n";
  s += "set xrange [-0.5:4.5]\nset yrange [-0.5:" + std::to_string(metrics.size()) + "-0.5] reverse\n";
  s += "set xtics ('general' 0, 'code' 1, 'math' 2, 'commonsense' 3, 'total' 4)\n";
  s += "set ytics (";
  for (size_t m = 0; m < metrics.size(); ++m)
    s += (m ? ", '" : "'") + metrics[m] + "' " + std::to_string(m);
  s += ")\n";
  s += "plot " + q +
       "rho_grid.csv' every ::1 using 1:2:4 with image notitle, '' every ::1 using 1:2:5 with labels notitle\n";
  return s;
}

}  // namespace clustertwin::experiments::igsp::detail
