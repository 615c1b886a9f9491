// Byte-wise records for the exchanges between ranks (start-up, allocations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace armci {

class RecordWriter {
 public:
  template <typename T>
  void add(const T& value) {
    auto* p = reinterpret_cast<const std::byte*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void add_bytes(std::span<const std::byte> data) {
    add<std::uint64_t>(data.size());
    bytes.insert(bytes.end(), data.begin(), data.end());
  }
  void add_string(std::string_view text) { add_bytes(std::as_bytes(std::span(text.data(), text.size()))); }
  std::vector<std::byte> bytes;
};

class RecordReader {
 public:
  explicit RecordReader(std::span<const std::byte> data) : data_(data) {}
  template <typename T>
  T take() {
    T value;
    check(sizeof(T));
    std::memcpy(&value, data_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::vector<std::byte> take_bytes() {
    auto n = take<std::uint64_t>();
    check(n);
    std::vector<std::byte> out(data_.begin() + static_cast<std::ptrdiff_t>(at_),
                               data_.begin() + static_cast<std::ptrdiff_t>(at_ + n));
    at_ += n;
    return out;
  }
  std::string take_string() {
    auto n = take<std::uint64_t>();
    check(n);
    std::string out(reinterpret_cast<const char*>(data_.data() + at_), n);
    at_ += n;
    return out;
  }

 private:
  void check(std::size_t n) const {
    if (at_ + n > data_.size()) throw std::runtime_error("truncated record from a peer");
  }
  std::span<const std::byte> data_;
  std::size_t at_ = 0;
};

}  // namespace armci
