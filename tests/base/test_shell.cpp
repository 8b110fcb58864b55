// base::shell_quote: every word comes back from a real /bin/sh exactly as it went in, one word
// each, and the quoting itself is the expected minimal one.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/shell.hpp"

namespace {

using pacer::base::shell_quote;

// Words a naive quoting gets wrong: dropped when empty, split on blanks or a newline, expanded ($,
// `, *, ~), a ' that ends the quotes, a backslash that double quotes or echo would interpret, an
// assignment taken for one at the start of a command.
const std::vector<std::string> kNasty = {"",
                                         "it's",
                                         "'",
                                         "''",
                                         "a b",
                                         "  lead and trail  ",
                                         "$HOME",
                                         "${PATH}x",
                                         "back\\slash",
                                         "\\'",
                                         "line\nbreak\n",
                                         "tab\there",
                                         "`id`",
                                         "$(id)",
                                         "*",
                                         "~",
                                         "a=b",
                                         "-n",
                                         "\"dq\"",
                                         "semi;colon&|",
                                         "#hash",
                                         "!bang",
                                         "é"};

// Runs `/bin/sh -c "printf '%s\0' WORDS"` (popen runs its command with /bin/sh -c) and splits
// what it printed at the NULs: the words the shell passed to printf.
std::vector<std::string> through_sh(const std::vector<std::string>& words) {
  std::string cmd = "printf '%s\\0'";
  for (const auto& w : words) {
    cmd += ' ';
    cmd += shell_quote(w);
  }
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return {};
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  std::vector<std::string> back;
  for (size_t at = 0; at < out.size();) {
    const size_t end = out.find('\0', at);
    back.push_back(out.substr(at, end - at));
    at = end == std::string::npos ? out.size() : end + 1;
  }
  return back;
}

TEST(ShellQuote, PlainWordsStayBareAndTheRestAreSingleQuoted) {
  EXPECT_EQ(shell_quote("/tmp/pacer-store_1.h5"), "/tmp/pacer-store_1.h5");
  EXPECT_EQ(shell_quote("relation"), "relation");
  EXPECT_EQ(shell_quote("12345:6,7@8%9+"), "12345:6,7@8%9+");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("back\\slash"), "'back\\slash'");
  EXPECT_EQ(shell_quote("a=b"), "'a=b'");  // bare, it would be an assignment as a command's first word
  EXPECT_EQ(shell_quote("~"), "'~'");
}

TEST(ShellQuote, EveryWordComesBackFromShUnchangedAndAlone) {
  for (const auto& w : kNasty) EXPECT_EQ(through_sh({w}), std::vector<std::string>{w}) << shell_quote(w);
  EXPECT_EQ(through_sh(kNasty), kNasty);
}

// A quoted word in a command's place is the command's name, never an assignment or an expansion.
TEST(ShellQuote, AQuotedFirstWordIsTheCommandName) {
  for (const std::string w : {"A=1", "$(echo true)", "true #x", "true;false"}) {
    const std::string cmd = shell_quote(w) + " 2>/dev/null";
    FILE* pipe = ::popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    const int status = ::pclose(pipe);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 127) << cmd << ": not 'command not found'";
  }
}

}  // namespace
