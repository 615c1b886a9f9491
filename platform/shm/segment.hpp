// Node-shared memory segments: one process creates a named segment, its
// node neighbours map it, and the name is removed once all have mapped it so
// nothing outlives the job.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace armci::platform {

class SharedSegment {
 public:
  SharedSegment() = default;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  SharedSegment(SharedSegment&& other) noexcept { *this = std::move(other); }
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  ~SharedSegment() { release(); }

  // Creates and maps a zero-filled segment of `bytes` (rounded up to pages),
  // its pages reserved (ShmSpaceError when /dev/shm lacks the room).
  static SharedSegment create(const std::string& name, std::size_t bytes);
  // The same outside /dev/shm, for when /dev/shm is full (a container's
  // 64 MiB): an anonymous memory file (memfd), whose pages count against the
  // process's memory, not /dev/shm's size. Neighbours open it through
  // /proc/<pid>/fd/<fd>, which is its name() until unlink(); nothing of it
  // can outlive the job, even one ended by SIGKILL. ShmSpaceError when the
  // pages cannot be reserved either.
  static SharedSegment create_outside_shm(std::size_t bytes);
  // Maps a segment a neighbour created, by the name() it had there.
  static SharedSegment attach(const std::string& name, std::size_t bytes);
  // Private anonymous memory with the same interface, for when no neighbour
  // needs to map it.
  static SharedSegment anonymous(std::size_t bytes);

  // Memory someone else owns and frees (a network layer's allocation),
  // under the same interface; release() forgets it without unmapping.
  static SharedSegment borrowed(void* address, std::size_t bytes);

  // Removes the name (mappings stay valid): nobody can attach afterwards.
  // Idempotent.
  void unlink();
  void release();

  void* address() const { return address_; }
  std::size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  bool outside_shm() const { return outside_shm_; }

 private:
  void* address_ = nullptr;
  std::size_t size_ = 0;
  std::string name_;
  bool owner_linked_ = false;
  bool borrowed_ = false;
  bool outside_shm_ = false;
  int descriptor_ = -1;  // a memfd's, open while neighbours may attach
};

// create() found too little room in /dev/shm for the segment's pages.
class ShmSpaceError : public std::runtime_error {
 public:
  ShmSpaceError(std::size_t asked, std::size_t left);
  std::size_t asked() const { return asked_; }
  std::size_t left() const { return left_; }

 private:
  std::size_t asked_;
  std::size_t left_;
};

// Bytes an unprivileged process may still place in /dev/shm (0 if unknown).
std::size_t shm_space_left();

// Page-rounded size.
std::size_t page_round(std::size_t bytes);

}  // namespace armci::platform
