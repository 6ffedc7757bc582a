#include "collector/lib_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace causeway::collector {
namespace {

// What the helper thread hands over; whoever comes last (the caller gone on a timeout, or the
// helper finishing) owns it, so a late result is closed, not leaked.
struct Job {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;
  UniqueFd fd;
  FileId id;
  std::shared_ptr<const ElfFile> elf;
  std::optional<Error> error;
};

void open_and_parse(Job& out, const std::string& path, const LibOpenOptions& o) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (o.nofollow ? O_NOFOLLOW : 0));
  if (fd < 0) {
    out.error = make_error("lib_open", "cannot open " + path + ": " + std::strerror(errno));
    return;
  }
  out.fd.reset(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    out.error = make_error("lib_open", "cannot stat " + path + ": " + std::strerror(errno));
    return;
  }
  out.id = FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  if (!S_ISREG(st.st_mode)) {
    out.error = make_error("lib_open", path + " is not a regular file (a FIFO or device in a library's place): not probed");
    return;
  }
  // The inode decides; the device number of a file reached through /proc/PID/map_files may be
  // the stacked file system's (overlayfs, btrfs subvolumes) while maps shows the lower one.
  if (o.expect && (st.st_ino != o.expect->ino || (o.check_dev && out.id.dev != o.expect->dev))) {
    out.error = make_error("lib_open", path + " is another file than the one the process maps (inode " +
                                           std::to_string(st.st_ino) + ", mapped " + std::to_string(o.expect->ino) +
                                           "): not probed");
    return;
  }
  if (st.st_size <= 0) {
    out.error = make_error("elf_parse", path + ": empty file");
    return;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* image = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (image == MAP_FAILED) {
    out.error = make_error("lib_open", "cannot map " + path + ": " + std::strerror(errno));
    return;
  }
  auto elf = ElfFile::from_image(image, size, path);
  ::munmap(image, size);
  if (!elf) out.error = elf.error();
  else out.elf = std::move(*elf);
}

}  // namespace

Result<OpenedLib> OpenedLib::open(const std::string& path, const LibOpenOptions& options) {
  auto job = std::make_shared<Job>();
  std::thread([job, path, options] {
    Job result;
    open_and_parse(result, path, options);
    std::lock_guard lock(job->mu);
    if (job->abandoned) return;  // result closes the fd
    job->fd = std::move(result.fd);
    job->id = result.id;
    job->elf = std::move(result.elf);
    job->error = std::move(result.error);
    job->done = true;
    job->cv.notify_one();
  }).detach();
  std::unique_lock lock(job->mu);
  if (!job->cv.wait_for(lock, options.timeout, [&] { return job->done; })) {
    job->abandoned = true;
    return make_error("lib_open", "opening " + path + " took over " + std::to_string(options.timeout.count()) +
                                      " ms (a file system that does not answer?): not probed");
  }
  OpenedLib lib;
  lib.fd_ = std::move(job->fd);
  lib.id_ = job->id;
  lib.elf_ = std::move(job->elf);
  if (job->error) return *job->error;  // lib closes the fd
  return lib;
}

std::string OpenedLib::fd_path() const { return "/proc/self/fd/" + std::to_string(fd_.get()); }

std::vector<uint8_t> OpenedLib::read_at(uint64_t offset, size_t n) const {
  std::vector<uint8_t> out(n);
  const ssize_t got = ::pread(fd_.get(), out.data(), n, static_cast<off_t>(offset));
  out.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return out;
}

}  // namespace causeway::collector
