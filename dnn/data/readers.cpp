#include "dnn/data/readers.hpp"

#include <fmt/format.h>
#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include "base/error.hpp"

namespace pacer::dnn::data {
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open (does it exist and is it readable?)", path.string()));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// ----- PNG (libpng) --------------------------------------------------------------------------
// libpng reports errors by longjmp back to the setjmp in decode_png. That function therefore holds
// only trivially destructible locals (a longjmp must skip no destructor), keeps what it allocates
// after the setjmp in volatile pointers, and releases the FILE*, libpng's structs and its buffers on
// both paths. The caller turns the copied error text into a pacer::Error.
constexpr png_uint_32 kMaxPngSide = 1 << 15;

struct PngDecode {
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  unsigned char* pixels = nullptr;  // std::malloc'd, height * width * 3 (RGB, interleaved); caller frees
  char error[320] = "";
};

void png_error_handler(png_structp png, png_const_charp message) {
  auto* d = static_cast<PngDecode*>(png_get_error_ptr(png));
  std::snprintf(d->error, sizeof d->error, "corrupt or truncated PNG (libpng: %s)", message ? message : "error");
  png_longjmp(png, 1);
}

// Fails the decode with `why` as the whole message (not a libpng diagnostic).
[[noreturn]] void png_fail(png_structp png, const char* why) {
  auto* d = static_cast<PngDecode*>(png_get_error_ptr(png));
  std::snprintf(d->error, sizeof d->error, "%s", why);
  png_longjmp(png, 1);
}

void png_warning_handler(png_structp, png_const_charp) {}  // benign: unknown chunks, colour profiles

bool decode_png(const char* path, PngDecode* d) {
  FILE* file = std::fopen(path, "rb");
  if (!file) {
    std::snprintf(d->error, sizeof d->error, "cannot open (does it exist and is it readable?)");
    return false;
  }
  png_byte signature[8];
  if (std::fread(signature, 1, sizeof signature, file) != sizeof signature ||
      png_sig_cmp(signature, 0, sizeof signature) != 0) {
    std::fclose(file);
    std::snprintf(d->error, sizeof d->error, "not a PNG file (bad signature)");
    return false;
  }
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, png_error_handler, png_warning_handler);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    if (png) png_destroy_read_struct(&png, nullptr, nullptr);
    std::fclose(file);
    std::snprintf(d->error, sizeof d->error, "libpng could not allocate its decoder");
    return false;
  }
  unsigned char* volatile pixels = nullptr;
  png_bytep* volatile rows = nullptr;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    std::free(rows);
    std::free(pixels);
    std::fclose(file);
    return false;
  }
  png_init_io(png, file);
  png_set_sig_bytes(png, sizeof signature);
  png_set_user_limits(png, kMaxPngSide, kMaxPngSide);
  png_read_info(png, info);
  // Any colour type and depth to 8-bit RGB, values as stored (no gamma correction; alpha dropped).
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  // Palette and low-depth expansion turn a tRNS chunk into an alpha channel: strip that too.
  if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
  const size_t row_bytes = size_t{width} * 3;
  if (png_get_rowbytes(png, info) != row_bytes)
    png_fail(png, "unsupported PNG pixel format (not 8-bit RGB after conversion)");
  pixels = static_cast<unsigned char*>(std::malloc(row_bytes * height));
  rows = static_cast<png_bytep*>(std::malloc(sizeof(png_bytep) * height));
  if (!pixels || !rows) png_fail(png, "out of memory for the decoded image");
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = pixels + y * row_bytes;
  png_read_image(png, rows);
  png_read_end(png, nullptr);  // a file cut after the pixel data still lacks its IEND chunk
  png_destroy_read_struct(&png, &info, nullptr);
  std::free(rows);
  std::fclose(file);
  d->width = width;
  d->height = height;
  d->pixels = pixels;
  return true;
}

constexpr const char* kImageFolderLayout =
    "expected the CINIC-10 layout DIR/{train,valid,test}/<class>/*.png, or DIR/<class>/*.png";

bool hidden(const fs::path& p) { return p.filename().string().starts_with('.'); }

bool png_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png";
}

// Sorted, non-hidden entries of `dir` (directory iteration order is unspecified).
std::vector<fs::directory_entry> sorted_entries(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::directory_entry> entries;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec))
    if (!hidden(it->path())) entries.push_back(*it);
  if (ec) throw Error(fmt::format("{}: cannot list the folder ({})", dir.string(), ec.message()));
  std::sort(entries.begin(), entries.end(), [](const fs::directory_entry& a, const fs::directory_entry& b) {
    return a.path().filename().string() < b.path().filename().string();
  });
  return entries;
}

// ----- R serialization (XDR) -----------------------------------------------------------------
// Just enough of R's format to read lazy-load indexes and character vectors: vectors, pairlists
// (attributes), symbols and references to them.
struct RObject {
  int type = 0;
  std::vector<int32_t> ints;
  std::vector<double> reals;
  std::vector<std::string> strings;
  std::vector<RObject> items;
  std::map<std::string, RObject> attributes;
  std::string symbol;
  bool na = false;  // NA_character_
};

constexpr int kSymSxp = 1, kListSxp = 2, kCharSxp = 9, kLglSxp = 10, kIntSxp = 13, kRealSxp = 14, kStrSxp = 16,
              kVecSxp = 19, kExprSxp = 20, kRefSxp = 255, kNilValue = 254, kGlobalEnv = 253, kEmptyEnv = 242,
              kBaseEnv = 241, kMissingArg = 251, kUnbound = 252, kAltrep = 238;

class RReader {
 public:
  RReader(const std::vector<uint8_t>& bytes, std::string what) : b_(bytes), what_(std::move(what)) {}

  RObject read_stream() {
    if (b_.size() < 14 || b_[0] != 'X' || b_[1] != '\n')
      fail("not an R XDR serialization (expected the 'X\\n' header)");
    pos_ = 2;
    const int32_t version = read_int();
    read_int();  // writer R version
    read_int();  // minimal reader R version
    if (version == 3) {
      const int32_t n = read_int();
      need(n);
      pos_ += n;  // native encoding name
    } else if (version != 2) {
      fail(fmt::format("unsupported serialization version {}", version));
    }
    return read_item(0);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(fmt::format("{}: corrupt R data at byte {}: {}", what_, pos_, why));
  }
  void need(int64_t n) const {
    if (n < 0 || pos_ + static_cast<size_t>(n) > b_.size()) fail("truncated");
  }
  int32_t read_int() {
    need(4);
    const auto v = static_cast<int32_t>(be32(&b_[pos_]));
    pos_ += 4;
    return v;
  }
  double read_double() {
    need(8);
    uint64_t u = (uint64_t{be32(&b_[pos_])} << 32) | be32(&b_[pos_ + 4]);
    pos_ += 8;
    double d;
    std::memcpy(&d, &u, sizeof d);
    return d;
  }
  int64_t read_length() {
    const int32_t n = read_int();
    if (n >= 0) return n;
    if (n != -1) fail("negative vector length");
    const int64_t hi = read_int(), lo = static_cast<uint32_t>(read_int());
    return (hi << 32) + lo;
  }

  RObject read_item(int depth) {
    if (depth > 200) fail("nesting too deep");
    const int32_t flags = read_int();
    const int type = flags & 0xFF;
    const bool has_attr = flags & (1 << 9), has_tag = flags & (1 << 10);
    RObject o;
    o.type = type;
    switch (type) {
      case kNilValue: case kGlobalEnv: case kEmptyEnv: case kBaseEnv: case kMissingArg: case kUnbound:
        return o;
      case kRefSxp: {
        int32_t index = flags >> 8;
        if (index == 0) index = read_int();
        if (index < 1 || index > static_cast<int32_t>(refs_.size())) fail("reference to an unknown symbol");
        return refs_[index - 1];
      }
      case kSymSxp: {
        const RObject name = read_item(depth + 1);
        o.symbol = name.strings.empty() ? "" : name.strings[0];
        refs_.push_back(o);
        return o;
      }
      case kListSxp: {
        // Pairlist: walk the CDR chain iteratively; tags become attribute-style names.
        RObject list;
        list.type = kListSxp;
        int32_t f = flags;
        for (;;) {
          if (f & (1 << 9)) read_item(depth + 1);  // attributes of the node (ignored)
          std::string tag;
          if (f & (1 << 10)) tag = read_item(depth + 1).symbol;
          RObject car = read_item(depth + 1);
          list.items.push_back(car);
          list.strings.push_back(tag);
          f = read_int();
          if ((f & 0xFF) == kNilValue) break;
          if ((f & 0xFF) != kListSxp) fail("pairlist ends in an unsupported object");
        }
        return list;
      }
      case kCharSxp: {
        const int32_t n = read_int();
        if (n == -1) {
          o.na = true;
          o.strings.emplace_back();
        } else {
          need(n);
          o.strings.emplace_back(reinterpret_cast<const char*>(&b_[pos_]), static_cast<size_t>(n));
          pos_ += n;
        }
        return o;  // CHARSXPs carry no attributes in a stream
      }
      case kLglSxp: case kIntSxp: {
        const int64_t n = read_length();
        need(4 * n);
        o.ints.reserve(n);
        for (int64_t i = 0; i < n; ++i) o.ints.push_back(read_int());
        break;
      }
      case kRealSxp: {
        const int64_t n = read_length();
        need(8 * n);
        for (int64_t i = 0; i < n; ++i) o.reals.push_back(read_double());
        break;
      }
      case kStrSxp: {
        const int64_t n = read_length();
        need(4 * n);
        o.strings.reserve(n);
        for (int64_t i = 0; i < n; ++i) {
          const RObject c = read_item(depth + 1);
          if (c.type != kCharSxp) fail("character vector element is not a string");
          o.strings.push_back(c.na ? std::string() : c.strings[0]);
        }
        break;
      }
      case kVecSxp: case kExprSxp: {
        const int64_t n = read_length();
        need(4 * n);
        for (int64_t i = 0; i < n; ++i) o.items.push_back(read_item(depth + 1));
        break;
      }
      case kAltrep:
        fail("ALTREP objects are not supported (re-save the data with a plain vector)");
      default:
        fail(fmt::format("unsupported R object type {}", type));
    }
    if (has_tag) fail("unexpected tag on a vector");
    if (has_attr) {
      const RObject attrs = read_item(depth + 1);
      for (size_t i = 0; i < attrs.items.size(); ++i) o.attributes[attrs.strings[i]] = attrs.items[i];
    }
    return o;
  }

  const std::vector<uint8_t>& b_;
  std::string what_;
  size_t pos_ = 0;
  std::vector<RObject> refs_;
};

struct RIndexEntry {
  int64_t offset = 0;
  int64_t length = 0;
};

struct RIndex {
  std::map<std::string, RIndexEntry> variables;
  int compression = 1;  // 0 none, 1 zlib, 2 bzip2, 3 xz (R's `compress` of makeLazyLoadDB)
};

RIndex read_rindex(const fs::path& base) {
  const fs::path rdx = base.string() + ".rdx";
  const auto raw = read_maybe_gzip(rdx);
  RReader reader(raw, rdx.string());
  const RObject top = reader.read_stream();
  const auto names_it = top.attributes.find("names");
  if (top.type != kVecSxp || names_it == top.attributes.end())
    throw Error(fmt::format("{}: not an R lazy-load index (no named list)", rdx.string()));
  RIndex index;
  const auto& names = names_it->second.strings;
  for (size_t i = 0; i < names.size() && i < top.items.size(); ++i) {
    if (names[i] == "variables") {
      const RObject& vars = top.items[i];
      const auto vn = vars.attributes.find("names");
      if (vn == vars.attributes.end()) throw Error(fmt::format("{}: variables without names", rdx.string()));
      for (size_t k = 0; k < vars.items.size() && k < vn->second.strings.size(); ++k) {
        const auto& pair = vars.items[k];
        int64_t off = 0, len = 0;
        if (pair.ints.size() == 2) off = pair.ints[0], len = pair.ints[1];
        else if (pair.reals.size() == 2) off = static_cast<int64_t>(pair.reals[0]), len = static_cast<int64_t>(pair.reals[1]);
        else throw Error(fmt::format("{}: bad (offset, length) entry for '{}'", rdx.string(), vn->second.strings[k]));
        index.variables[vn->second.strings[k]] = {off, len};
      }
    } else if (names[i] == "compressed") {
      const RObject& c = top.items[i];
      if (!c.ints.empty()) index.compression = c.ints[0];
      else if (!c.reals.empty()) index.compression = static_cast<int>(c.reals[0]);
    }
  }
  return index;
}

}  // namespace

std::vector<uint8_t> inflate(const uint8_t* data, size_t size, size_t expected_size, bool gzip,
                             const std::string& what) {
  z_stream zs{};
  if (inflateInit2(&zs, gzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK) throw Error(what + ": zlib initialisation failed");
  std::vector<uint8_t> out(expected_size > 0 ? expected_size : size * 4 + 1024);
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = static_cast<uInt>(size);
  size_t produced = 0;
  int rc = Z_OK;
  for (;;) {
    if (produced == out.size()) out.resize(out.size() * 2);
    zs.next_out = out.data() + produced;
    zs.avail_out = static_cast<uInt>(out.size() - produced);
    rc = ::inflate(&zs, Z_NO_FLUSH);
    produced = out.size() - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // gzip files may hold several members (pigz, concatenation): continue with the next one.
      if (gzip && zs.avail_in > 0) {
        inflateReset(&zs);
        continue;
      }
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END)
    throw Error(fmt::format("{}: compressed data is corrupt or truncated (zlib: {})", what, zs.msg ? zs.msg : "error"));
  if (expected_size > 0 && produced != expected_size)
    throw Error(fmt::format("{}: decompressed {} bytes, the header promised {}", what, produced, expected_size));
  out.resize(produced);
  return out;
}

std::vector<uint8_t> read_maybe_gzip(const fs::path& path) {
  auto bytes = read_file(path);
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b)
    return inflate(bytes.data(), bytes.size(), 0, true, path.string());
  return bytes;
}

Samples read_idx(const fs::path& images, const fs::path& labels, int num_classes) {
  const auto img = read_maybe_gzip(images);
  const auto lab = read_maybe_gzip(labels);
  if (img.size() < 16 || be32(img.data()) != 0x00000803)
    throw Error(fmt::format("{}: not an IDX image file (bad magic number)", images.string()));
  if (lab.size() < 8 || be32(lab.data()) != 0x00000801)
    throw Error(fmt::format("{}: not an IDX label file (bad magic number)", labels.string()));
  const int64_t n = be32(img.data() + 4), rows = be32(img.data() + 8), cols = be32(img.data() + 12);
  const int64_t nl = be32(lab.data() + 4);
  if (n != nl)
    throw Error(fmt::format("{} holds {} images but {} holds {} labels", images.string(), n, labels.string(), nl));
  if (static_cast<int64_t>(img.size()) != 16 + n * rows * cols)
    throw Error(fmt::format("{}: truncated or oversized ({} bytes, expected {})", images.string(), img.size(),
                            16 + n * rows * cols));
  if (static_cast<int64_t>(lab.size()) != 8 + n)
    throw Error(fmt::format("{}: truncated or oversized ({} bytes, expected {})", labels.string(), lab.size(), 8 + n));
  Samples s;
  s.task = "image";
  s.sample_shape = {1, rows, cols};
  s.num_classes = num_classes;
  s.values.assign(img.begin() + 16, img.end());
  s.labels.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    const int label = lab[8 + i];
    if (label >= num_classes)
      throw Error(fmt::format("{}: label {} at record {} is not below {}", labels.string(), label, i, num_classes));
    s.labels.push_back(label);
  }
  return s;
}

Samples read_cifar_batches(const std::vector<fs::path>& files, int label_bytes, bool fine) {
  constexpr int64_t kPixels = 3 * 32 * 32;
  const int64_t record = label_bytes + kPixels;
  Samples s;
  s.task = "image";
  s.sample_shape = {3, 32, 32};
  s.num_classes = label_bytes == 1 ? 10 : (fine ? 100 : 20);
  for (const auto& f : files) {
    const auto bytes = read_file(f);
    if (bytes.empty() || bytes.size() % record != 0)
      throw Error(fmt::format("{}: size {} is not a multiple of the {}-byte CIFAR record (wrong file, or "
                              "CIFAR-10 vs CIFAR-100?)",
                              f.string(), bytes.size(), record));
    for (size_t off = 0; off < bytes.size(); off += record) {
      const int label = (label_bytes == 2 && fine) ? bytes[off + 1] : bytes[off];
      if (label >= s.num_classes)
        throw Error(fmt::format("{}: label {} at byte {} is not below {}", f.string(), label, off, s.num_classes));
      s.labels.push_back(label);
      s.values.insert(s.values.end(), bytes.begin() + off + label_bytes, bytes.begin() + off + record);
    }
  }
  return s;
}

RgbImage read_png_rgb(const fs::path& path) {
  PngDecode d;
  if (!decode_png(path.c_str(), &d)) throw Error(fmt::format("{}: {}", path.string(), d.error));
  const std::unique_ptr<unsigned char, decltype(&std::free)> owned(d.pixels, &std::free);
  RgbImage image;
  image.height = d.height;
  image.width = d.width;
  image.pixels.assign(d.pixels, d.pixels + image.height * image.width * 3);
  return image;
}

Samples read_png_class_folders(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(fmt::format("{}: not a folder ({})", dir.string(), kImageFolderLayout));
  Samples s;
  s.task = "image";
  std::vector<fs::path> class_dirs;
  for (const auto& e : sorted_entries(dir)) {
    if (!e.is_directory(ec)) continue;  // README, csv files next to the class folders
    class_dirs.push_back(e.path());
    s.class_names.push_back(e.path().filename().string());
  }
  if (class_dirs.empty()) throw Error(fmt::format("{}: no class folders ({})", dir.string(), kImageFolderLayout));
  s.num_classes = static_cast<int>(class_dirs.size());
  fs::path first_file;
  for (size_t c = 0; c < class_dirs.size(); ++c) {
    for (const auto& e : sorted_entries(class_dirs[c])) {
      const fs::path& f = e.path();
      if (e.is_directory(ec))
        throw Error(fmt::format("{}: a folder inside class folder '{}' ({})", f.string(), s.class_names[c],
                                kImageFolderLayout));
      if (!png_name(f))
        throw Error(fmt::format("{}: not a .png file (only PNG images are read; {})", f.string(), kImageFolderLayout));
      const RgbImage image = read_png_rgb(f);
      if (first_file.empty()) {
        first_file = f;
        s.sample_shape = {3, image.height, image.width};
      } else if (image.height != s.sample_shape[1] || image.width != s.sample_shape[2]) {
        throw Error(fmt::format("{}: image is {}x{} pixels but {} is {}x{} (all images must have one size)", f.string(),
                                image.width, image.height, first_file.string(), s.sample_shape[2], s.sample_shape[1]));
      }
      // Interleaved RGB (HWC) to planes (CHW), the layout of the CIFAR readers.
      const int64_t plane = image.height * image.width;
      const size_t base = s.values.size();
      s.values.resize(base + 3 * plane);
      for (int64_t p = 0; p < plane; ++p)
        for (int64_t ch = 0; ch < 3; ++ch) s.values[base + ch * plane + p] = image.pixels[p * 3 + ch];
      s.labels.push_back(static_cast<int32_t>(c));
    }
  }
  if (s.labels.empty())
    throw Error(fmt::format("{}: no PNG images in its {} class folders ({})", dir.string(), class_dirs.size(),
                            kImageFolderLayout));
  return s;
}

std::vector<std::string> unserialize_character(const std::vector<uint8_t>& stream, const std::string& what) {
  RReader reader(stream, what);
  const RObject o = reader.read_stream();
  if (o.type != kStrSxp) throw Error(fmt::format("{}: R object is not a character vector (type {})", what, o.type));
  return o.strings;
}

std::vector<std::string> rdata_objects(const fs::path& base) {
  std::vector<std::string> names;
  for (const auto& [name, entry] : read_rindex(base).variables) names.push_back(name);
  return names;
}

std::vector<std::string> rdata_character(const fs::path& base, const std::string& object) {
  const RIndex index = read_rindex(base);
  const auto it = index.variables.find(object);
  if (it == index.variables.end())
    throw Error(fmt::format("{}.rdx: no object '{}' in this R database", base.string(), object));
  const fs::path rdb = base.string() + ".rdb";
  const auto bytes = read_file(rdb);
  const auto [offset, length] = it->second;
  if (offset < 0 || length < 5 || static_cast<size_t>(offset + length) > bytes.size())
    throw Error(fmt::format("{}: object '{}' lies outside the file (truncated?)", rdb.string(), object));
  const uint8_t* chunk = bytes.data() + offset;
  const size_t out_size = be32(chunk);
  const std::string what = fmt::format("{} ({})", rdb.string(), object);
  std::vector<uint8_t> stream;
  if (index.compression == 1) {
    stream = inflate(chunk + 4, static_cast<size_t>(length - 4), out_size, false, what);
  } else if (index.compression == 0) {
    stream.assign(chunk + 4, chunk + length);
  } else {
    // Types 2 and 3 carry a method byte after the length: 'Z' zlib, '0' stored, '2' bzip2, 'X' xz.
    const char method = static_cast<char>(chunk[4]);
    if (method == 'Z') stream = inflate(chunk + 5, static_cast<size_t>(length - 5), out_size, false, what);
    else if (method == '0') stream.assign(chunk + 5, chunk + length);
    else throw Error(fmt::format("{}: compression '{}' (bzip2/xz) is not supported; re-save with zlib", what, method));
  }
  return unserialize_character(stream, what);
}

}  // namespace pacer::dnn::data
