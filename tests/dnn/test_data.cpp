// Dataset readers on files the tests write (IDX, CIFAR, PNG class folders, R serialization, text),
// splits, and the named datasets when the Debian packages are installed.
#include <gtest/gtest.h>
#include <png.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "base/error.hpp"
#include "dnn/data/datasets.hpp"
#include "dnn/data/readers.hpp"
#include "dnn/data/text.hpp"

namespace fs = std::filesystem;
namespace pd = pacer::dnn::data;

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

// Writes an 8-bit PNG with libpng: `pixels` holds `height` rows of width * channels bytes (gray or
// palette index 1, RGB 3, RGBA 4). Returns false on a libpng error (only POD locals: see setjmp).
bool write_png(const char* path, int width, int height, int color_type, const uint8_t* pixels,
               bool interlace = false, const png_color* palette = nullptr, int palette_size = 0,
               const png_byte* trans = nullptr, int num_trans = 0) {
  FILE* f = std::fopen(path, "wb");
  if (!f) return false;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    if (png) png_destroy_write_struct(&png, nullptr);
    std::fclose(f);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    return false;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, width, height, 8, color_type, interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (palette) png_set_PLTE(png, info, palette, palette_size);
  if (trans) png_set_tRNS(png, info, trans, num_trans, nullptr);
  png_write_info(png, info);
  const int channels = color_type == PNG_COLOR_TYPE_RGB ? 3 : color_type == PNG_COLOR_TYPE_RGB_ALPHA ? 4 : 1;
  const int passes = png_set_interlace_handling(png);
  for (int pass = 0; pass < passes; ++pass)
    for (int y = 0; y < height; ++y) png_write_row(png, pixels + y * width * channels);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
  return true;
}

std::vector<uint8_t> slurp_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Pixel value of image `img` at (y, x), channel ch.
uint8_t pattern(int img, int y, int x, int ch) {
  return static_cast<uint8_t>((img * 37 + y * 50 + x * 13 + ch * 80) % 256);
}

enum class PngKind { kGray, kRgb, kRgba, kRgbInterlaced, kPalette };
const png_color kPalette[4] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {12, 34, 56}};
const png_byte kPaletteAlpha[1] = {0};  // index 0 transparent (tRNS): its colour must still be read

// Writes an h x w PNG of `kind` and returns the RGB pixels the reader must produce, CHW.
std::vector<uint8_t> write_test_png(const fs::path& p, PngKind kind, int img, int h, int w) {
  std::vector<uint8_t> raw, chw(3 * h * w);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      for (int ch = 0; ch < 3; ++ch) {
        const int idx = (y * w + x) % 4;
        uint8_t v = pattern(img, y, x, ch);
        if (kind == PngKind::kGray) v = pattern(img, y, x, 0);
        if (kind == PngKind::kPalette)
          v = ch == 0 ? kPalette[idx].red : ch == 1 ? kPalette[idx].green : kPalette[idx].blue;
        chw[ch * h * w + y * w + x] = v;
      }
      switch (kind) {
        case PngKind::kGray: raw.push_back(pattern(img, y, x, 0)); break;
        case PngKind::kPalette: raw.push_back(static_cast<uint8_t>((y * w + x) % 4)); break;
        case PngKind::kRgba:
          for (int ch = 0; ch < 3; ++ch) raw.push_back(pattern(img, y, x, ch));
          raw.push_back(static_cast<uint8_t>(x * 40));  // alpha, dropped by the reader
          break;
        default:
          for (int ch = 0; ch < 3; ++ch) raw.push_back(pattern(img, y, x, ch));
      }
    }
  const int type = kind == PngKind::kGray      ? PNG_COLOR_TYPE_GRAY
                   : kind == PngKind::kRgba    ? PNG_COLOR_TYPE_RGB_ALPHA
                   : kind == PngKind::kPalette ? PNG_COLOR_TYPE_PALETTE
                                               : PNG_COLOR_TYPE_RGB;
  fs::create_directories(p.parent_path());
  const bool ok = kind == PngKind::kPalette
                      ? write_png(p.c_str(), w, h, type, raw.data(), false, kPalette, 4, kPaletteAlpha, 1)
                      : write_png(p.c_str(), w, h, type, raw.data(), kind == PngKind::kRgbInterlaced);
  EXPECT_TRUE(ok) << p;
  return chw;
}

// The message of the pacer::Error that `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const pacer::Error& e) {
    return e.what();
  }
  return "";
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

TEST(Data, PngClassFoldersInTheCinicLayout) {
  TempDir t;
  const fs::path root = t.path / "cinic", train = root / "train";
  constexpr int h = 4, w = 5;  // not square: a swapped height and width shows
  struct Spec {
    const char* cls;
    const char* file;
    PngKind kind;
  };
  // Written out of order; the reader sorts classes and files by name.
  const std::vector<Spec> written = {
      {"dog", "l.png", PngKind::kRgb},         {"dog", "i.png", PngKind::kRgb},
      {"dog", "k.png", PngKind::kGray},        {"dog", "j.png", PngKind::kRgb},
      {"bird", "b_rgb.png", PngKind::kRgb},    {"bird", "a_gray.png", PngKind::kGray},
      {"bird", "d_adam7.png", PngKind::kRgbInterlaced}, {"bird", "c_rgba.png", PngKind::kRgba},
      {"cat", "f.png", PngKind::kRgb},         {"cat", "e_palette.png", PngKind::kPalette},
      {"cat", "h.png", PngKind::kGray},        {"cat", "g.PNG", PngKind::kRgb},
  };
  std::map<std::string, std::vector<uint8_t>> expected_pixels;
  for (size_t i = 0; i < written.size(); ++i)
    expected_pixels[std::string(written[i].cls) + "/" + written[i].file] =
        write_test_png(train / written[i].cls / written[i].file, written[i].kind, static_cast<int>(i) + 1, h, w);
  std::ofstream(train / "dog" / ".DS_Store") << "hidden files are skipped";
  std::ofstream(root / "README.md") << "files next to the split folders are ignored";
  write_test_png(root / "valid" / "bird" / "v.png", PngKind::kRgb, 99, h, w);  // not read: train/ exists

  const std::vector<std::string> order = {"bird/a_gray.png", "bird/b_rgb.png", "bird/c_rgba.png", "bird/d_adam7.png",
                                          "cat/e_palette.png", "cat/f.png", "cat/g.PNG", "cat/h.png",
                                          "dog/i.png", "dog/j.png", "dog/k.png", "dog/l.png"};
  std::vector<uint8_t> expected;
  for (const auto& f : order) expected.insert(expected.end(), expected_pixels[f].begin(), expected_pixels[f].end());

  const auto s = pd::read_png_class_folders(train);
  ASSERT_EQ(s.size(), 12);
  EXPECT_EQ(s.task, "image");
  EXPECT_EQ(s.sample_shape, std::vector<int64_t>({3, h, w}));
  EXPECT_EQ(s.num_classes, 3);
  EXPECT_EQ(s.class_names, std::vector<std::string>({"bird", "cat", "dog"}));
  EXPECT_EQ(s.labels, std::vector<int32_t>({0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}));
  // Raw 0..255 bytes in CHW order like the CIFAR reader (training scales them): gray replicated to
  // three planes, palette colours looked up (tRNS ignored), alpha dropped, interlacing undone.
  ASSERT_EQ(s.values.size(), expected.size());
  EXPECT_EQ(s.values, expected);
  EXPECT_EQ(s.values[0 * 20 + 7], s.values[2 * 20 + 7]);                       // gray: planes equal
  EXPECT_EQ(s.values[1 * 60 + 1 * 20 + 2 * 5 + 3], pattern(5, 2, 3, 1));        // b_rgb.png, G at (2, 3)
  EXPECT_EQ(s.values[4 * 60 + 0 * 20 + 0], 255);                                // palette index 0 red
  EXPECT_EQ(s.values[4 * 60 + 2 * 20 + 3], 56);                                 // palette index 3 blue
  // Deterministic: a second read is identical.
  const auto again = pd::read_png_class_folders(train);
  EXPECT_EQ(again.values, s.values);
  EXPECT_EQ(again.labels, s.labels);

  // One image on its own.
  const auto image = pd::read_png_rgb(train / "bird" / "b_rgb.png");
  EXPECT_EQ(image.height, h);
  EXPECT_EQ(image.width, w);
  EXPECT_EQ(image.pixels[(2 * w + 3) * 3 + 1], pattern(5, 2, 3, 1));

  // cinic:DIR reads DIR/train when it exists, else DIR itself as the class folders, and splits 80/20.
  EXPECT_EQ(pd::dataset_info("cinic:" + root.string()).task, "image");
  const auto split = pd::load_dataset("cinic:" + root.string());
  EXPECT_EQ(split.train.size(), 10);
  EXPECT_EQ(split.eval.size(), 2);
  EXPECT_EQ(split.train.class_names, s.class_names);
  EXPECT_NE(split.description.find("bird, cat, dog"), std::string::npos) << split.description;
  const auto direct = pd::load_dataset("cinic:" + train.string());
  EXPECT_EQ(direct.train.values, split.train.values);
  EXPECT_EQ(direct.eval.labels, split.eval.labels);
  const auto reordered = pd::load_dataset("cinic:" + root.string(), {.split_seed = 5});
  EXPECT_NE(reordered.train.values, split.train.values);
  EXPECT_NE(error_of([&] { pd::load_dataset("nope"); }).find("cinic:DIR"), std::string::npos);
}

TEST(Data, PngClassFoldersRejectCorruptFilesAndOtherLayouts) {
  TempDir t;
  auto expect_error = [](const fs::path& dir, const std::string& names, const std::string& says) {
    const std::string e = error_of([&] { pd::read_png_class_folders(dir); });
    ASSERT_FALSE(e.empty()) << dir << " was accepted";
    EXPECT_NE(e.find(names), std::string::npos) << e;
    EXPECT_NE(e.find(says), std::string::npos) << e;
  };
  write_test_png(t.path / "good" / "a" / "x.png", PngKind::kRgb, 1, 4, 5);
  const auto good = slurp_bytes(t.path / "good" / "a" / "x.png");
  ASSERT_GT(good.size(), 60u);

  // Truncated in the middle of the pixel data, and cut just before its IEND chunk.
  auto put = [&](const std::string& folder, const std::vector<uint8_t>& bytes) {
    fs::create_directories(t.path / folder / "a");
    write_bytes(t.path / folder / "a" / "x.png", bytes);
  };
  put("cut", std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(good.size() / 2)));
  expect_error(t.path / "cut", (t.path / "cut" / "a" / "x.png").string(), "truncated");
  put("noend", std::vector<uint8_t>(good.begin(), good.end() - 12));  // IEND is the last 12 bytes
  expect_error(t.path / "noend", (t.path / "noend" / "a" / "x.png").string(), "truncated");
  // A flipped byte in the compressed data fails the IDAT chunk's CRC.
  auto flipped = good;
  flipped[good.size() - 12 - 6] ^= 0x55;
  put("crc", flipped);
  expect_error(t.path / "crc", (t.path / "crc" / "a" / "x.png").string(), "corrupt");
  // Not a PNG at all, under a .png name; and a file of another type in a class folder.
  fs::create_directories(t.path / "fake" / "a");
  std::ofstream(t.path / "fake" / "a" / "x.png") << "GIF89a, not a PNG";
  expect_error(t.path / "fake", (t.path / "fake" / "a" / "x.png").string(), "not a PNG");
  fs::create_directories(t.path / "jpeg" / "a");
  fs::copy_file(t.path / "good" / "a" / "x.png", t.path / "jpeg" / "a" / "x.png");
  std::ofstream(t.path / "jpeg" / "a" / "y.jpg") << "jpeg";
  expect_error(t.path / "jpeg", (t.path / "jpeg" / "a" / "y.jpg").string(), "not a .png");
  // Mixed sizes: the second image (5x4 after a 4x5 one) is named.
  write_test_png(t.path / "mixed" / "a" / "1.png", PngKind::kRgb, 1, 4, 5);
  write_test_png(t.path / "mixed" / "b" / "2.png", PngKind::kGray, 2, 5, 4);
  expect_error(t.path / "mixed", (t.path / "mixed" / "b" / "2.png").string(), "one size");
  // Empty folder, class folders without images, a missing folder, the split level given as classes.
  fs::create_directories(t.path / "empty");
  expect_error(t.path / "empty", (t.path / "empty").string(), "CINIC-10 layout");
  fs::create_directories(t.path / "noimages" / "a");
  expect_error(t.path / "noimages", "no PNG images", "CINIC-10 layout");
  expect_error(t.path / "missing", (t.path / "missing").string(), "CINIC-10 layout");
  write_test_png(t.path / "splits" / "valid" / "a" / "x.png", PngKind::kRgb, 1, 4, 5);
  expect_error(t.path / "splits", (t.path / "splits" / "valid" / "a").string(), "CINIC-10 layout");
  EXPECT_NE(error_of([&] { pd::load_dataset("cinic:" + (t.path / "empty").string()); }).find("CINIC-10 layout"),
            std::string::npos);

  // Failed decodes release their FILE* (libpng's longjmp path closes it).
  if (fs::exists("/proc/self/fd")) {
    auto open_fds = [] { return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator{}); };
    const auto before = open_fds();
    for (int i = 0; i < 50; ++i) {
      EXPECT_THROW(pd::read_png_rgb(t.path / "cut" / "a" / "x.png"), pacer::Error);
      EXPECT_THROW(pd::read_png_rgb(t.path / "crc" / "a" / "x.png"), pacer::Error);
    }
    EXPECT_EQ(open_fds(), before);
  }
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
