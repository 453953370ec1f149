#include "common/gnuplot.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace clustertwin {

bool gnuplot_installed() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

bool run_gnuplot_file(const std::string& path) {
  std::string quoted = "'";
  for (char c : path)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  return gnuplot_installed() && std::system(("gnuplot " + quoted).c_str()) == 0;
}

Status draw_png_with_gnuplot(const std::string& png, const std::function<std::string(const std::string&)>& script) {
  const std::string temp = png + ".tmp" + std::to_string(::getpid()) + ".png";
  // gnuplot's own stdout is not ours: a command printing JSON keeps it clean.
  FILE* gnuplot = ::popen("gnuplot >/dev/null", "w");
  if (gnuplot == nullptr) return Status::io_error(png + ": cannot start gnuplot");
  const std::string text = script(temp);
  const bool written = std::fwrite(text.data(), 1, text.size(), gnuplot) == text.size();
  const int rc = ::pclose(gnuplot);
  std::error_code ec;
  if (!written || rc != 0 || !std::filesystem::exists(temp, ec)) {
    std::filesystem::remove(temp, ec);
    return Status::io_error(png + ": gnuplot failed (exit status " + std::to_string(rc) + ")");
  }
  std::filesystem::rename(temp, png, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    return Status::io_error(png + ": " + ec.message());
  }
  return Status::ok();
}

}  // namespace clustertwin
