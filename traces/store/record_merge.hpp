#pragma once
// The merge of the records of one type from several stores, by its entry (traces/record_traits.hpp):
// a record with a merge_key joins its rows by key, any other record of one name must be equal in
// every input. merge_stores (traces/store/merge.hpp) runs one per group of the store; the rules are
// its own.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "traces/record_traits.hpp"
#include "traces/store/merge.hpp"
#include "traces/store/store.hpp"

namespace pacer::traces {

namespace detail {

// The rows of a record merged by key and their key; a record merged whole has neither.
template <typename R>
struct MergeTypes {
  struct Whole {};
  using Row = Whole;
  using Key = Whole;
};
template <KeyedMerge R>
struct MergeTypes<R> {
  using Row = typename std::remove_cvref_t<decltype(std::declval<R&>().*RecordTraits<R>::rows)>::value_type;
  using Key = decltype(row_merge_key(std::declval<const R&>(), std::declval<const Row&>()));
};

}  // namespace detail

template <StoredRecord R>
class RecordMerge {
 public:
  // Adds every record of R's group in the store `in`.
  void add(const Store& in, MergeReport& report) {
    for (const auto& name : in.list<R>()) {
      Merging& m = add(name, in.read<R>(name), in.path(), report);
      m.sources.emplace_back(in.path(), in.read_provenance(std::string(E::group), name));
    }
  }

  // Writes every merged record into `out`, by name, with the provenance of the runs that measured
  // what it holds (not the merge's own).
  void write(Store& out, MergeReport& report) const {
    for (const auto& [name, merging] : records_) {
      out.write_from(assemble(merging, report), name, provenance(merging));
      ++report.records[std::string(E::group)];
    }
  }

 private:
  using E = RecordTraits<R>;
  using Row = typename detail::MergeTypes<R>::Row;
  using Key = typename detail::MergeTypes<R>::Key;

  // One record of a name being merged: its header (the record with its keyed rows removed), the file
  // the header came from, and every keyed row with the file it came from.
  struct Merging {
    R header;
    std::filesystem::path header_from;
    std::map<Key, std::pair<Row, std::filesystem::path>> rows;
    std::vector<Key> order;   // the keys in the order the inputs brought them
    int bringers = 0;         // inputs that brought new rows
    double cost = 0;          // merge_cost summed over the inputs that brought new rows
    std::string board_model;  // of the rows that name one, and the file the first came from
    std::filesystem::path board_from;
    std::vector<std::pair<std::filesystem::path, Provenance>> sources;  // every input's provenance of it
  };

  Merging& add(const std::string& name, R record, const std::filesystem::path& from, MergeReport& report) {
    if constexpr (KeyedMerge<R>)
      add_keyed(name, std::move(record), from, report);
    else
      add_whole(name, std::move(record), from, report);
    return records_.at(name);
  }

  // The provenance of the inputs whose rows the merged record holds, in input order (a record
  // merged whole, or one without rows: the input it was taken from).
  static Provenance provenance(const Merging& m) {
    std::vector<std::filesystem::path> from;
    if constexpr (KeyedMerge<R>)
      for (const auto& [key, row] : m.rows) from.push_back(row.second);
    if (from.empty()) from.push_back(m.header_from);
    std::optional<Provenance> p;
    for (const auto& [path, source] : m.sources)
      if (std::find(from.begin(), from.end(), path) != from.end()) p = p ? combine_provenance(*p, source) : source;
    return p.value_or(Provenance{});
  }

  // Records merged as a whole: equal or an error.
  void add_whole(const std::string& name, R record, const std::filesystem::path& from, MergeReport& report) {
    const auto it = records_.find(name);
    if (it == records_.end()) {
      records_.emplace(name, Merging{std::move(record), from, {}, {}, 0, 0, {}, {}, {}});
    } else if (it->second.header == record) {
      ++report.duplicates;
    } else {
      throw Error(fmt::format("{} '{}' differs between {} and {}: keep one of the two stores out of the merge", E::what,
                              name, it->second.header_from.string(), from.string()));
    }
  }

  void add_keyed(const std::string& name, R record, const std::filesystem::path& from, MergeReport& report) {
    if constexpr (requires { E::board; }) check_board(name, record, from);
    std::vector<Row> rows = std::move(record.*E::rows);
    (record.*E::rows).clear();
    double record_cost = 0;
    if constexpr (requires { E::merge_cost; }) {
      record_cost = record.*E::merge_cost;
      record.*E::merge_cost = 0;  // differs between shards
    }
    auto [it, fresh] = records_.try_emplace(name);
    Merging& m = it->second;
    if (fresh) {
      m.header = record;
      m.header_from = from;
    } else if (!(m.header == record)) {
      throw Error(fmt::format("{} '{}' differs between {} ({}) and {} ({}): merge only the shards of one campaign",
                              E::what, name, m.header_from.string(), E::header_text(m.header), from.string(),
                              E::header_text(record)));
    }
    bool brought_new = false;
    // A row that is the other one continued further (the entry's `continues`) replaces it.
    const auto continues = [](const Row& before, const Row& after) {
      if constexpr (requires { E::continues(before, after); })
        return E::continues(before, after);
      else
        return false;
    };
    for (auto& row : rows) {
      if constexpr (requires { E::row_board; }) check_row_board(m, name, row, from);
      const Key k = row_merge_key(record, row);
      const auto found = m.rows.find(k);
      if (found == m.rows.end()) {
        m.rows.emplace(k, std::make_pair(std::move(row), from));
        m.order.push_back(k);
        brought_new = true;
      } else if (found->second.first == row) {
        ++report.duplicates;
      } else if (continues(found->second.first, row)) {  // the same run, trained further: the longer one
        found->second = std::make_pair(std::move(row), from);
        brought_new = true;
      } else if (continues(row, found->second.first)) {
        ++report.duplicates;
      } else {
        throw Error(
            fmt::format("{} '{}': {} in {} but {} in {}: two different results for the same job; keep one of "
                        "the two stores out of the merge or rerun that job",
                        E::what, name, E::row_text(found->second.first), found->second.second.string(),
                        E::row_text(row), from.string()));
      }
    }
    if (brought_new) {
      m.cost += record_cost;
      ++m.bringers;
    }
  }

  // Records of one name measured on different board models are not one record.
  void check_board(const std::string& name, const R& record, const std::filesystem::path& from) const {
    const auto it = records_.find(name);
    if (it == records_.end() || it->second.header.*E::board == record.*E::board) return;
    throw Error(fmt::format(
        "{} '{}' was measured on board model {} in {} but on {} in {}: {}s of different board models cannot be "
        "merged into one {} (give each board's {} its own name)",
        E::what, name, it->second.header.*E::board, it->second.header_from.string(), record.*E::board, from.string(),
        E::what, E::what, E::what));
  }

  // Every row of one record that names its board model must name the same one (docs/cluster.md).
  static void check_row_board(Merging& m, const std::string& name, const Row& row, const std::filesystem::path& from) {
    const std::string& model = row.*E::row_board;
    if (model.empty()) return;
    if (m.board_model.empty()) {
      m.board_model = model;
      m.board_from = from;
    } else if (m.board_model != model) {
      throw Error(fmt::format(
          "{} '{}' was measured on board model '{}' in {} but on '{}' in {}: {}s of different board models cannot be "
          "merged into one (give each board model's {} its own name, or its own store)",
          E::what, name, m.board_model, m.board_from.string(), model, from.string(), E::what, E::what));
    }
  }

  static R assemble(const Merging& m, MergeReport& report) {
    R r = m.header;
    if constexpr (KeyedMerge<R>) {
      // Rows that one input brought keep its order (a store merged into an empty one or into
      // itself is unchanged); the rows of several inputs (shards) follow their keys, the order of
      // the whole campaign's record.
      if (m.bringers <= 1)
        for (const auto& k : m.order) (r.*E::rows).push_back(m.rows.at(k).first);
      else
        for (const auto& [k, row] : m.rows) (r.*E::rows).push_back(row.first);
      report.entries += static_cast<int>(m.rows.size());
      if constexpr (requires { E::merge_cost; }) r.*E::merge_cost = m.cost;
    }
    return r;
  }

  std::map<std::string, Merging> records_;
};

}  // namespace pacer::traces
