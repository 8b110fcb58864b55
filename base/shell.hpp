#pragma once
// Quoting for the POSIX shell: the one home of how pacer writes a word into a generated script (the
// Slurm batch scripts, the emulated board's nvpmodel) or a command line shown to the user. pacer
// itself runs programs without a shell (base/process.hpp).
#include <string>
#include <string_view>

namespace pacer::base {

// `word` as exactly one sh word that the shell hands on unchanged: bare when it is not empty and
// made only of letters, digits and / . _ - + : , @ % (characters sh never interprets, in any
// position), else in single quotes with each ' written as '\'' (inside single quotes sh interprets
// nothing: not $, `, \, a space or a newline).
std::string shell_quote(std::string_view word);

}  // namespace pacer::base
