#include "platform/shm/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace armci::platform {

std::size_t page_round(std::size_t bytes) {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

namespace {
std::runtime_error system_error(const std::string& what, const std::string& name) {
  return std::runtime_error(what + "(" + name + "): " + std::strerror(errno));
}

void* map_descriptor(int fd, std::size_t bytes, const std::string& name, int flags = 0) {
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | flags, fd, 0);
  if (address == MAP_FAILED) throw system_error("mmap", name);
  return address;
}
}  // namespace

std::size_t shm_space_left() {
  struct statvfs fs;
  if (statvfs("/dev/shm", &fs) != 0) return 0;
  return static_cast<std::size_t>(fs.f_bavail) * fs.f_frsize;
}

ShmSpaceError::ShmSpaceError(std::size_t asked, std::size_t left)
    : std::runtime_error("/dev/shm has " + std::to_string(left) + " bytes free, " + std::to_string(asked) +
                         " asked"),
      asked_(asked),
      left_(left) {}

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    release();
    address_ = std::exchange(other.address_, nullptr);
    size_ = std::exchange(other.size_, 0);
    name_ = std::move(other.name_);
    owner_linked_ = std::exchange(other.owner_linked_, false);
    borrowed_ = std::exchange(other.borrowed_, false);
    outside_shm_ = std::exchange(other.outside_shm_, false);
    descriptor_ = std::exchange(other.descriptor_, -1);
  }
  return *this;
}

SharedSegment SharedSegment::create(const std::string& name, std::size_t bytes) {
  SharedSegment segment;
  segment.size_ = page_round(bytes);
  segment.name_ = name;
  // What cannot fit is refused before posix_fallocate: a failing one holds
  // the pages it got until it gives up, so a neighbour's segment made at
  // that moment could fail although it fits. (0: unknown; fallocate says.)
  if (const std::size_t left = shm_space_left(); left != 0 && left < segment.size_)
    throw ShmSpaceError(segment.size_, left);
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw system_error("shm_open", name);
  // On any throw below the segment's release closes fd and removes the name.
  segment.descriptor_ = fd;
  segment.owner_linked_ = true;
  if (ftruncate(fd, static_cast<off_t>(segment.size_)) != 0) throw system_error("ftruncate", name);
  // tmpfs hands out pages on first touch: without reserving them now, a full
  // /dev/shm is a SIGBUS at some later write instead of an error here.
  if (int error = posix_fallocate(fd, 0, static_cast<off_t>(segment.size_)); error != 0) {
    if (error == ENOSPC) throw ShmSpaceError(segment.size_, shm_space_left());
    errno = error;
    throw system_error("posix_fallocate", name);
  }
  // The owner populates (zeroes) its pages now: left to the first access,
  // a neighbour's first read of a fresh segment would pay for clearing
  // each page inside its transfer.
  segment.address_ = map_descriptor(fd, segment.size_, name, MAP_POPULATE);
  close(std::exchange(segment.descriptor_, -1));  // the mapping keeps the memory
  return segment;
}

SharedSegment SharedSegment::create_outside_shm(std::size_t bytes) {
  SharedSegment segment;
  segment.size_ = page_round(bytes);
  segment.outside_shm_ = true;
  int fd = memfd_create("armci", MFD_CLOEXEC);
  if (fd < 0) throw system_error("memfd_create", "armci");
  segment.descriptor_ = fd;  // closed by the segment's release on any throw below
  segment.name_ = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(fd);
  if (ftruncate(fd, static_cast<off_t>(segment.size_)) != 0) throw system_error("ftruncate", segment.name_);
  // As in /dev/shm, reserve now: an error here, not a SIGBUS later.
  if (int error = posix_fallocate(fd, 0, static_cast<off_t>(segment.size_)); error != 0) {
    if (error == ENOSPC || error == ENOMEM) throw ShmSpaceError(segment.size_, shm_space_left());
    errno = error;
    throw system_error("posix_fallocate", segment.name_);
  }
  segment.address_ = map_descriptor(fd, segment.size_, segment.name_);
  return segment;
}

SharedSegment SharedSegment::attach(const std::string& name, std::size_t bytes) {
  SharedSegment segment;
  segment.size_ = page_round(bytes);
  segment.name_ = name;
  // A memfd a neighbour made is reached through its /proc link.
  const bool memory_file = name.starts_with("/proc/");
  int fd = memory_file ? open(name.c_str(), O_RDWR | O_CLOEXEC) : shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) throw system_error(memory_file ? "open" : "shm_open", name);
  segment.descriptor_ = fd;  // closed by the segment's release if mapping throws
  segment.address_ = map_descriptor(fd, segment.size_, name);
  close(std::exchange(segment.descriptor_, -1));
  return segment;
}

SharedSegment SharedSegment::anonymous(std::size_t bytes) {
  SharedSegment segment;
  segment.size_ = page_round(bytes);
  void* address = mmap(nullptr, segment.size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (address == MAP_FAILED) throw system_error("mmap", "anonymous");
  segment.address_ = address;
  return segment;
}

SharedSegment SharedSegment::borrowed(void* address, std::size_t bytes) {
  SharedSegment segment;
  segment.address_ = address;
  segment.size_ = bytes;
  segment.borrowed_ = true;
  return segment;
}

void SharedSegment::unlink() {
  if (descriptor_ >= 0) {
    close(descriptor_);
    descriptor_ = -1;
  }
  if (owner_linked_) {
    shm_unlink(name_.c_str());
    owner_linked_ = false;
  }
}

void SharedSegment::release() {
  unlink();
  if (address_ != nullptr && !borrowed_) munmap(address_, size_);
  address_ = nullptr;
  borrowed_ = false;
  outside_shm_ = false;
  size_ = 0;
}

}  // namespace armci::platform
