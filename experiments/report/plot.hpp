#pragma once
// Figures through gnuplot: every plot is written as a data file (NAME.dat), a script (NAME.gp)
// that a user can restyle and rerun (`gnuplot NAME.gp` in the output folder), and the rendered
// NAME.png, NAME.svg and, where gnuplot has cairo, NAME.pdf.
#include <filesystem>
#include <string>
#include <vector>

namespace pacer::experiments {

struct PlotSeries {
  std::string title;
  std::string style = "linespoints";  // gnuplot "with" clause: points, lines, linespoints, boxes, ...
  std::vector<double> x;
  std::vector<double> y;
  std::vector<std::string> labels;    // optional point labels (drawn beside the points; "" : none)
  std::vector<double> err;            // optional error bars: +-err[k] around y[k] (e.g. one std)
  double label_dy = 0.8;              // vertical offset of the point labels [characters]
};

struct Plot {
  std::string name;  // file stem
  std::string title;
  std::string xlabel;
  std::string ylabel;
  bool logx = false;
  bool logy = false;
  std::vector<PlotSeries> series;
  std::vector<double> vlines;              // vertical reference lines (e.g. the power cap)
  std::vector<std::string> vline_titles;   // each line's label, top right of it (the k-th a row lower)
  std::vector<std::string> vline_colors;   // each line's colour ("": the cap's red, dashed)
  std::vector<double> hlines;              // horizontal reference lines
  std::vector<std::string> hline_titles;
  std::vector<std::string> xtics;          // categorical x axis: x values 0..n-1 get these names
  // Labels placed one by one (each with its own vertical offset, so that labels of close points
  // can go above and below them instead of onto each other).
  struct PointLabel {
    double x, y;
    std::string text;
    double dy = 0;  // vertical offset [characters]; the label starts just right of the point
  };
  std::vector<PointLabel> point_labels;
  std::string extra;                       // extra gnuplot commands placed before `plot`
  // The key outside the plot, to the right: it can never cover a point, a cap line or its label.
  bool key_outside = true;
};

// A matrix rendered as a heat map with the values written in the cells (Figure 5 style).
struct Heatmap {
  std::string name;
  std::string title;
  std::string xlabel;
  std::string ylabel;
  std::vector<std::string> xnames;  // columns
  std::vector<std::string> ynames;  // rows
  std::vector<std::vector<double>> values;  // [row][col]
  std::string value_format = "%.1f";
  std::string colorbar_label;
};

struct RenderResult {
  std::vector<std::filesystem::path> files;  // every file written (data, script, images)
  bool rendered = false;                     // false when gnuplot is missing (script + data only)
};

// Writes NAME.dat and NAME.gp into `dir` and runs gnuplot there. Throws Error if gnuplot fails on
// the script (with gnuplot's first error line); leaves no partial image behind.
RenderResult render(const Plot& plot, const std::filesystem::path& dir);
RenderResult render(const Heatmap& map, const std::filesystem::path& dir);

// Path of the gnuplot executable, or "" if it is not installed.
std::string gnuplot_path();

}  // namespace pacer::experiments
