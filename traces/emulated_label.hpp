#pragma once
// The one spelling of the label that marks what an emulated device produced (records carry it as
// their `emulated` field), in each form that tables, figure titles, messages and logs use. The forms
// are pinned by stored and printed outputs (figure titles, `pacer profile` output): change them here
// or nowhere.
#include <string_view>

namespace pacer::traces {

enum class EmulatedMark {
  Suffix,  // " (emulated)" after a device or record name: "jetson-nano (emulated)"
  Item,    // ", emulated" closing a parenthesis of facts: "profile cnn (jetson-nano, emulated)"
  Banner,  // " [EMULATED]" after a run's heading in command output and logs, to stand out
};

// The mark in the given form when `emulated`, else "".
constexpr std::string_view emulated_mark(bool emulated, EmulatedMark form = EmulatedMark::Suffix) {
  if (!emulated) return "";
  switch (form) {
    case EmulatedMark::Item:
      return ", emulated";
    case EmulatedMark::Banner:
      return " [EMULATED]";
    case EmulatedMark::Suffix:
      break;
  }
  return " (emulated)";
}

}  // namespace pacer::traces
