// One lane of the store writer's queue (calls, switches or wake-ups): records
// in fixed-size chunks that are handed to the writer whole and recycled after
// the commit.
//
// Why chunks and not one std::vector per lane: a vector that doubles briefly
// holds its old and new buffers (3× its rows), and two vectors swapped between
// producer and writer each keep their high-water capacity, so a burst cost ~4×
// the rows it queued for the rest of the run. Chunks hold the rows actually
// waiting, rounded up to one chunk, and a burst's extra chunks are freed once
// it is written. Not thread-safe: StoreWriter locks around it.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

namespace causeway {

template <typename R> class RecordLane {
public:
  static constexpr size_t kChunkRows = 4096;
  using Chunk =
      std::vector<R>; // reserved to kChunkRows once; never grows past it

  void push(const R &r) {
    if (chunks_.empty() || chunks_.back().size() == kChunkRows)
      chunks_.push_back(fresh_chunk());
    chunks_.back().push_back(r);
    ++rows_;
  }

  size_t rows() const { return rows_; }

  // Moves every waiting row into `out` (the writer's batch), oldest first.
  void take_all(std::vector<Chunk> &out) {
    for (Chunk &c : chunks_)
      out.push_back(std::move(c));
    chunks_.clear();
    rows_ = 0;
  }

  // Takes written chunks back: a few are kept for the next batch, the rest are
  // freed.
  void recycle(std::vector<Chunk> &written) {
    for (Chunk &c : written) {
      if (spare_.size() >= kSpareChunks)
        break;
      c.clear();
      spare_.push_back(std::move(c));
    }
    written.clear();
  }

private:
  // Two spares cover a steady stream (one filling while one is written).
  static constexpr size_t kSpareChunks = 2;

  Chunk fresh_chunk() {
    if (!spare_.empty()) {
      Chunk c = std::move(spare_.back());
      spare_.pop_back();
      return c;
    }
    Chunk c;
    c.reserve(kChunkRows);
    return c;
  }

  std::deque<Chunk> chunks_;
  std::vector<Chunk> spare_;
  size_t rows_ = 0;
};

} // namespace causeway
