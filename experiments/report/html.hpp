#pragma once
// The report's index.html: its tables (the Markdown tables rendered as HTML tables), its SVG figures
// and the run's provenance on one page that needs nothing but the report folder (no external URL,
// no script).
#include <filesystem>
#include <string>
#include <vector>

namespace pacer::experiments {

// The small Markdown that pacer writes (a title line, `| a | b |` tables with a `|---|` rule,
// paragraphs, `- ` lists, `#` headings, **bold** and `code`) as HTML; everything else is escaped
// text.
std::string markdown_to_html(const std::string& markdown);
std::string html_escape(const std::string& text);

struct IndexPage {
  std::string title;
  std::vector<std::pair<std::string, std::string>> tables;   // (file stem, its Markdown)
  std::vector<std::pair<std::string, std::string>> figures;  // (SVG file name, what it shows)
  std::string provenance_markdown;                           // provenance.md, else what the report knows
};

std::string index_html(const IndexPage& page);

}  // namespace pacer::experiments
