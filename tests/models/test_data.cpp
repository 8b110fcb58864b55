// Dataset readers on files the tests write (IDX, CIFAR, R serialization, text), splits, and the
// named datasets when the Debian packages are installed.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "models/data/datasets.hpp"
#include "models/data/readers.hpp"
#include "models/data/text.hpp"
#include "traces/error.hpp"

namespace fs = std::filesystem;
namespace pd = pacer::models::data;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("pacer-test-data-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void put32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void write_gzip(const fs::path& p, const std::vector<uint8_t>& b) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
  gzclose(f);
}

// n images of rows x cols whose pixels encode (image index, pixel index), labels i % 10.
void write_idx(const fs::path& dir, const std::string& prefix, int n, int rows, int cols, bool gz) {
  std::vector<uint8_t> img, lab;
  put32(img, 0x803), put32(img, n), put32(img, rows), put32(img, cols);
  put32(lab, 0x801), put32(lab, n);
  for (int i = 0; i < n; ++i) {
    lab.push_back(static_cast<uint8_t>(i % 10));
    for (int p = 0; p < rows * cols; ++p) img.push_back(static_cast<uint8_t>((i * 7 + p) % 256));
  }
  const std::string suffix = gz ? ".gz" : "";
  if (gz) {
    write_gzip(dir / (prefix + "-images-idx3-ubyte" + suffix), img);
    write_gzip(dir / (prefix + "-labels-idx1-ubyte" + suffix), lab);
  } else {
    write_bytes(dir / (prefix + "-images-idx3-ubyte"), img);
    write_bytes(dir / (prefix + "-labels-idx1-ubyte"), lab);
  }
}

// --- a tiny R serialization writer (format 3, XDR) ---
struct RWriter {
  std::vector<uint8_t> b;
  RWriter() {
    b = {'X', '\n'};
    put32(b, 3), put32(b, 0x040201), put32(b, 0x030500), put32(b, 5);
    for (char c : std::string("UTF-8")) b.push_back(static_cast<uint8_t>(c));
  }
  void chars(const std::string* s) {
    if (!s) {
      put32(b, 9), put32(b, 0xFFFFFFFF);
      return;
    }
    put32(b, 0x00040009), put32(b, static_cast<uint32_t>(s->size()));
    b.insert(b.end(), s->begin(), s->end());
  }
  void strsxp(const std::vector<const std::string*>& v, bool names_attr_follow = false) {
    put32(b, 16 | (names_attr_follow ? 0x200 : 0)), put32(b, static_cast<uint32_t>(v.size()));
    for (auto* s : v) chars(s);
  }
  void names_attribute(const std::vector<std::string>& names, bool first_symbol) {
    put32(b, 0x402);  // pairlist node with tag
    if (first_symbol) {
      put32(b, 1);
      const std::string n = "names";
      chars(&n);
    } else {
      put32(b, (1 << 8) | 255);  // reference to symbol #1 ("names")
    }
    std::vector<const std::string*> ptrs;
    for (const auto& n : names) ptrs.push_back(&n);
    strsxp(ptrs);
    put32(b, 254);
  }
};

std::vector<uint8_t> zlib_compress(const std::vector<uint8_t>& in) {
  uLongf size = compressBound(in.size());
  std::vector<uint8_t> out(size);
  compress(out.data(), &size, in.data(), in.size());
  out.resize(size);
  return out;
}

}  // namespace

TEST(Data, IdxReadsPlainAndGzipAndRejectsCorruptFiles) {
  TempDir t;
  write_idx(t.path, "train", 12, 5, 4, true);
  write_idx(t.path, "t10k", 3, 5, 4, false);
  const auto s = pd::read_idx(t.path / "train-images-idx3-ubyte.gz", t.path / "train-labels-idx1-ubyte.gz");
  EXPECT_EQ(s.size(), 12);
  EXPECT_EQ(s.sample_shape, std::vector<int64_t>({1, 5, 4}));
  EXPECT_EQ(s.labels[11], 1);
  EXPECT_EQ(s.values[3 * 20 + 2], (3 * 7 + 2) % 256);
  const auto plain = pd::read_idx(t.path / "t10k-images-idx3-ubyte", t.path / "t10k-labels-idx1-ubyte");
  EXPECT_EQ(plain.size(), 3);

  // Truncated image file.
  auto bytes = pd::read_maybe_gzip(t.path / "t10k-images-idx3-ubyte");
  bytes.resize(bytes.size() - 1);
  write_bytes(t.path / "bad-images", bytes);
  try {
    pd::read_idx(t.path / "bad-images", t.path / "t10k-labels-idx1-ubyte");
    FAIL() << "truncated file accepted";
  } catch (const pacer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  // Labels swapped for images: bad magic.
  EXPECT_THROW(pd::read_idx(t.path / "t10k-labels-idx1-ubyte", t.path / "t10k-labels-idx1-ubyte"), pacer::Error);
  // A corrupt gzip stream.
  auto gz = std::vector<uint8_t>{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3};
  write_bytes(t.path / "corrupt.gz", gz);
  EXPECT_THROW(pd::read_maybe_gzip(t.path / "corrupt.gz"), pacer::Error);
  EXPECT_THROW(pd::read_idx(t.path / "missing", t.path / "missing"), pacer::Error);

  // The generic idx:DIR dataset concatenates train and t10k and splits 80/20.
  const auto split = pd::load_dataset("idx:" + t.path.string());
  EXPECT_EQ(split.train.size(), 12);
  EXPECT_EQ(split.eval.size(), 3);
}

TEST(Data, CifarBinaryBatches) {
  TempDir t;
  std::vector<uint8_t> c10, c100;
  for (int i = 0; i < 3; ++i) {
    c10.push_back(static_cast<uint8_t>(i + 4));
    c100.push_back(static_cast<uint8_t>(i));       // coarse
    c100.push_back(static_cast<uint8_t>(90 + i));  // fine
    for (int p = 0; p < 3072; ++p) {
      c10.push_back(static_cast<uint8_t>((i + p) % 251));
      c100.push_back(static_cast<uint8_t>((i * 3 + p) % 251));
    }
  }
  write_bytes(t.path / "b10.bin", c10);
  write_bytes(t.path / "b100.bin", c100);
  const auto s10 = pd::read_cifar_batches({t.path / "b10.bin"}, 1, false);
  EXPECT_EQ(s10.size(), 3);
  EXPECT_EQ(s10.labels, std::vector<int32_t>({4, 5, 6}));
  EXPECT_EQ(s10.sample_shape, std::vector<int64_t>({3, 32, 32}));
  EXPECT_EQ(s10.values[3072 + 1025], (1 + 1025) % 251);  // CHW order kept
  const auto fine = pd::read_cifar_batches({t.path / "b100.bin"}, 2, true);
  EXPECT_EQ(fine.labels, std::vector<int32_t>({90, 91, 92}));
  EXPECT_EQ(fine.num_classes, 100);
  EXPECT_EQ(pd::read_cifar_batches({t.path / "b100.bin"}, 2, false).labels, std::vector<int32_t>({0, 1, 2}));
  // A CIFAR-100 file read as CIFAR-10 has the wrong record size.
  EXPECT_THROW(pd::read_cifar_batches({t.path / "b100.bin"}, 1, false), pacer::Error);
}

TEST(Data, RSerializedCharacterVectorAndLazyLoadDatabase) {
  const std::string a = "It was a truth", b = "";
  RWriter obj;
  obj.strsxp({&a, nullptr, &b});
  EXPECT_EQ(pd::unserialize_character(obj.b, "blob"), std::vector<std::string>({a, "", ""}));

  // rdb: one zlib chunk with a 4-byte big-endian length prefix.
  TempDir t;
  std::vector<uint8_t> rdb = {0xAA, 0xBB};  // the object does not start at offset 0
  const uint32_t offset = static_cast<uint32_t>(rdb.size());
  put32(rdb, static_cast<uint32_t>(obj.b.size()));
  const auto z = zlib_compress(obj.b);
  rdb.insert(rdb.end(), z.begin(), z.end());
  const uint32_t length = static_cast<uint32_t>(rdb.size() - offset);
  write_bytes(t.path / "Rdata.rdb", rdb);

  // rdx: list(variables = list(novel = c(offset, length)), references = list(), compressed = TRUE)
  RWriter idx;
  put32(idx.b, 19 | 0x200), put32(idx.b, 3);
  put32(idx.b, 19 | 0x200), put32(idx.b, 1);              // variables
  put32(idx.b, 13), put32(idx.b, 2), put32(idx.b, offset), put32(idx.b, length);
  idx.names_attribute({"novel"}, true);
  put32(idx.b, 19), put32(idx.b, 0);                      // references
  put32(idx.b, 10), put32(idx.b, 1), put32(idx.b, 1);     // compressed = TRUE
  idx.names_attribute({"variables", "references", "compressed"}, false);
  write_gzip(t.path / "Rdata.rdx", idx.b);

  EXPECT_EQ(pd::rdata_objects(t.path / "Rdata"), std::vector<std::string>({"novel"}));
  EXPECT_EQ(pd::rdata_character(t.path / "Rdata", "novel")[0], a);
  EXPECT_THROW(pd::rdata_character(t.path / "Rdata", "emma"), pacer::Error);
  // Truncated serialization.
  auto cut = obj.b;
  cut.resize(cut.size() - 3);
  EXPECT_THROW(pd::unserialize_character(cut, "cut"), pacer::Error);
}

TEST(Data, VocabularyAndTextWindows) {
  EXPECT_EQ(pd::Vocabulary::kSize, 96);
  EXPECT_EQ(pd::Vocabulary::filter("Caf\xc3\xa9 \"ok\"\r\n\t1!"), "Caf \"ok\"\n1!");
  for (int i = 0; i < pd::Vocabulary::kSize; ++i) EXPECT_EQ(pd::Vocabulary::id(pd::Vocabulary::symbol(i)), i);
  const auto s = pd::text_windows("abcdefghij", 4);  // 10 chars -> (10 - 1) / 4 = 2 windows
  ASSERT_EQ(s.size(), 2);
  EXPECT_EQ(s.values[0], pd::Vocabulary::id('a'));
  EXPECT_EQ(s.labels[0], pd::Vocabulary::id('b'));
  EXPECT_EQ(s.values[4], pd::Vocabulary::id('e'));
  EXPECT_EQ(s.labels[7], pd::Vocabulary::id('i'));
  TempDir t;
  std::ofstream(t.path / "book.txt") << std::string(2000, 'x');
  const auto d = pd::load_dataset("text:" + (t.path / "book.txt").string());
  EXPECT_EQ(d.train.size() + d.eval.size(), (2000 - 1) / 64);
  EXPECT_THROW(pd::load_dataset("text:" + (t.path / "none.txt").string()), pacer::Error);
}

TEST(Data, SplitsAreDeterministicDisjointAndEightyTwenty) {
  EXPECT_EQ(pd::permutation(100, 7), pd::permutation(100, 7));
  EXPECT_NE(pd::permutation(100, 7), pd::permutation(100, 8));
  pd::Samples s;
  s.task = "image";
  s.sample_shape = {1, 1, 1};
  s.num_classes = 10;
  for (int i = 0; i < 100; ++i) s.values.push_back(static_cast<uint8_t>(i)), s.labels.push_back(i % 10);
  const auto a = pd::split(s, 0.8, 3, "x"), b = pd::split(s, 0.8, 3, "x");
  EXPECT_EQ(a.train.values, b.train.values);
  EXPECT_EQ(a.train.size(), 80);
  EXPECT_EQ(a.eval.size(), 20);
  std::set<uint8_t> seen(a.train.values.begin(), a.train.values.end());
  for (auto v : a.eval.values) EXPECT_FALSE(seen.count(v));
  EXPECT_EQ(pd::first(a.train, 10).size(), 10);
}

TEST(Data, MissingPackagesAreNamed) {
  pd::DatasetOptions o;
  o.fmnist_dir = "/nonexistent/fashion-mnist";
  o.austen_rdata = "/nonexistent/Rdata";
  try {
    pd::load_dataset("fmnist-proxy", o);
    FAIL();
  } catch (const pacer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dataset-fashion-mnist"), std::string::npos);
  }
  try {
    pd::load_dataset("austen-emma", o);
    FAIL();
  } catch (const pacer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("r-cran-janeaustenr"), std::string::npos);
  }
  EXPECT_THROW(pd::load_dataset("mnist", o), pacer::Error);
}

TEST(Data, FashionMnistPartitionsAreDisjoint) {
  const pd::DatasetOptions o;
  if (!fs::exists(o.fmnist_dir)) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const auto pre = pd::fmnist_partition("fmnist-pretrain", o);
  const auto proxy = pd::fmnist_partition("fmnist-proxy", o);
  const auto ta = pd::fmnist_partition("fmnist-target-a", o);
  const auto tb = pd::fmnist_partition("fmnist-target-b", o);
  EXPECT_EQ(pre.size(), 30000);
  EXPECT_EQ(proxy.size(), 15000);
  EXPECT_EQ(ta.size(), 15000);
  EXPECT_EQ(tb.size(), 5000);
  for (auto l : pre.labels) ASSERT_LT(l, 5);
  for (auto l : proxy.labels) ASSERT_GE(l, 5);
  for (auto l : tb.labels) ASSERT_GE(l, 5);
  auto hashes = [](const pd::Samples& s) {
    std::set<std::string> h;
    for (int64_t i = 0; i < s.size(); ++i)
      h.insert(std::string(s.values.begin() + i * 784, s.values.begin() + (i + 1) * 784));
    return h;
  };
  const auto hp = hashes(proxy);
  int shared = 0;
  for (const auto& h : hashes(ta)) shared += hp.count(h);
  EXPECT_LE(shared, 3);  // Fashion-MNIST itself holds a handful of duplicate images
  // target-b is shifted: its first two rows and columns are blank.
  for (int64_t i = 0; i < 50; ++i)
    for (int x = 0; x < 28; ++x) ASSERT_EQ(tb.values[i * 784 + x], 0);
  const auto split = pd::load_dataset("fmnist-proxy", o);
  EXPECT_EQ(split.train.size(), 12000);
  EXPECT_EQ(split.eval.size(), 3000);
}

TEST(Data, AustenNovelsFromTheRPackage) {
  const pd::DatasetOptions o;
  if (!fs::exists(o.austen_rdata.string() + ".rdx")) GTEST_SKIP() << "r-cran-janeaustenr not installed";
  EXPECT_EQ(pd::rdata_objects(o.austen_rdata),
            std::vector<std::string>({"emma", "mansfieldpark", "northangerabbey", "persuasion", "prideprejudice",
                                      "sensesensibility"}));
  const auto emma = pd::rdata_character(o.austen_rdata, "emma");
  EXPECT_EQ(emma.size(), 16235u);
  EXPECT_EQ(emma[0], "EMMA");
  EXPECT_EQ(emma[2], "By Jane Austen");
  const auto d = pd::load_dataset("austen-persuasion", o);
  EXPECT_GT(d.train.size(), 5000);
  EXPECT_EQ(d.train.sample_shape, std::vector<int64_t>({64}));
}
