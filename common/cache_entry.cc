// Cache file encoding; see cache_entry.h. Layout: the 8-byte magic, a kind
// byte, a format byte, then length-prefixed fields (8-byte little-endian
// lengths), then the 32-byte SHA-256 of all that precedes it.
#include "common/cache_entry.h"

#include "common/hash.h"

namespace fad {

namespace {

constexpr std::string_view kMagic = "FADCACHE";
constexpr char kFormat = 1;
constexpr char kResultKind = 'R';
constexpr char kManifestKind = 'M';
constexpr std::size_t kDigestBytes = 32;

class Writer {
 public:
  explicit Writer(char kind) {
    out_ += kMagic;
    out_ += kind;
    out_ += kFormat;
  }
  void number(std::uint64_t n) {
    for (int i = 0; i < 8; ++i) out_ += static_cast<char>((n >> (8 * i)) & 0xff);
  }
  void bytes(std::string_view b) {
    number(b.size());
    out_ += b;
  }
  std::string finish() {
    out_ += Sha256().update(out_).raw();
    return std::move(out_);
  }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(std::string_view data) : data_(data) {}
  bool number(std::uint64_t* n) {
    if (data_.size() - pos_ < 8) return false;
    *n = 0;
    for (int i = 0; i < 8; ++i)
      *n |= static_cast<std::uint64_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return true;
  }
  bool bytes(std::string* b) {
    std::uint64_t n = 0;
    if (!number(&n) || n > data_.size() - pos_) return false;
    b->assign(data_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

/// The fields of an intact file of `kind`, or why it is not one.
Result<std::string_view> body_of(std::string_view bytes, char kind) {
  const std::size_t header = kMagic.size() + 2;
  if (bytes.size() < header + kDigestBytes || bytes.substr(0, kMagic.size()) != kMagic)
    return make_error("not a fad cache file");
  if (bytes[kMagic.size()] != kind) return make_error("a cache file of another kind");
  if (bytes[kMagic.size() + 1] != kFormat) return make_error("a cache file of another format version");
  const auto content = bytes.substr(0, bytes.size() - kDigestBytes);
  if (Sha256().update(content).raw() != bytes.substr(bytes.size() - kDigestBytes))
    return make_error("checksum mismatch (torn or corrupted)");
  return content.substr(header);
}

}  // namespace

std::string encode_result(const CompileResult& r) {
  Writer w(kResultKind);
  w.bytes(r.object);
  w.number(r.depfile_template ? 1 : 0);
  w.bytes(r.depfile_template.value_or(""));
  w.bytes(r.stdout_text);
  w.bytes(r.stderr_text);
  return w.finish();
}

Result<CompileResult> decode_result(std::string_view bytes) {
  auto body = body_of(bytes, kResultKind);
  if (!body) return make_error(body.error());
  Reader r(*body);
  CompileResult out;
  std::uint64_t has_depfile = 0;
  std::string depfile;
  if (!r.bytes(&out.object) || !r.number(&has_depfile) || !r.bytes(&depfile) || !r.bytes(&out.stdout_text) ||
      !r.bytes(&out.stderr_text) || !r.done() || has_depfile > 1)
    return make_error("malformed result fields");
  if (has_depfile) out.depfile_template = std::move(depfile);
  return out;
}

std::string encode_manifest(const CacheManifest& m) {
  Writer w(kManifestKind);
  w.number(m.entries.size());
  for (const auto& e : m.entries) {
    w.bytes(e.result_key);
    w.number(e.files.size());
    for (const auto& [path, hash] : e.files) {
      w.bytes(path);
      w.bytes(hash);
    }
  }
  return w.finish();
}

Result<CacheManifest> decode_manifest(std::string_view bytes) {
  auto body = body_of(bytes, kManifestKind);
  if (!body) return make_error(body.error());
  Reader r(*body);
  CacheManifest m;
  std::uint64_t entries = 0;
  if (!r.number(&entries)) return make_error("malformed manifest");
  for (std::uint64_t i = 0; i < entries; ++i) {
    CacheManifestEntry e;
    std::uint64_t files = 0;
    if (!r.bytes(&e.result_key) || !r.number(&files)) return make_error("malformed manifest entry");
    for (std::uint64_t f = 0; f < files; ++f) {
      std::string path, hash;
      if (!r.bytes(&path) || !r.bytes(&hash)) return make_error("malformed manifest entry");
      e.files.emplace_back(std::move(path), std::move(hash));
    }
    m.entries.push_back(std::move(e));
  }
  if (!r.done()) return make_error("malformed manifest (trailing bytes)");
  return m;
}

}  // namespace fad
