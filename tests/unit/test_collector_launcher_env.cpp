// Launcher ranks parsed from /proc/PID/environ text: the variables each launcher sets, and
// strict refusal of anything malformed (the environment is written by the traced process).
#include <doctest/doctest.h>

#include <string>

#include "collector/launcher_env.h"

namespace causeway::collector {
namespace {

std::string env(std::initializer_list<const char*> entries) {
  std::string out;
  for (const char* e : entries) {
    out += e;
    out += '\0';
  }
  return out;
}

}  // namespace

TEST_CASE("torchrun: RANK, WORLD_SIZE, LOCAL_RANK and the rendezvous as the job id") {
  auto r = launcher_rank_from_environ(env({"PATH=/usr/bin", "RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=1",
                                           "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"}));
  REQUIRE(r);
  CHECK(r->rank == 5);
  CHECK(r->world_size == 8);
  CHECK(r->local_rank == 1);
  CHECK(r->source == "RANK");
  CHECK(r->job_id == "master:10.0.0.1:29500");
  auto e = launcher_rank_from_environ(env({"RANK=0", "WORLD_SIZE=2", "TORCHELASTIC_RUN_ID=abc-1", "MASTER_ADDR=h", "MASTER_PORT=1"}));
  REQUIRE(e);
  CHECK(e->job_id == "torchelastic:abc-1");
}

TEST_CASE("Open MPI, PMI and SLURM variables; torchrun's win when both are set") {
  auto o = launcher_rank_from_environ(env({"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_RANK=3"}));
  REQUIRE(o);
  CHECK(o->rank == 3);
  CHECK(o->source == "OMPI_COMM_WORLD_RANK");
  auto p = launcher_rank_from_environ(env({"PMI_RANK=1", "PMI_SIZE=2"}));
  REQUIRE(p);
  CHECK(p->source == "PMI_RANK");
  auto s = launcher_rank_from_environ(env({"SLURM_PROCID=7", "SLURM_NTASKS=16", "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0"}));
  REQUIRE(s);
  CHECK(s->rank == 7);
  CHECK(s->job_id == "slurm:4242.0");
  auto both = launcher_rank_from_environ(env({"SLURM_PROCID=0", "SLURM_NTASKS=2", "RANK=6", "WORLD_SIZE=8"}));
  REQUIRE(both);
  CHECK(both->rank == 6);
  CHECK(both->source == "RANK");
}

TEST_CASE("malformed values are ignored, never guessed") {
  CHECK_FALSE(launcher_rank_from_environ(env({"RANK=1"})));                    // no size
  CHECK_FALSE(launcher_rank_from_environ(env({"RANK=4", "WORLD_SIZE=4"})));    // rank out of range
  CHECK_FALSE(launcher_rank_from_environ(env({"RANK=-1", "WORLD_SIZE=4"})));
  CHECK_FALSE(launcher_rank_from_environ(env({"RANK=1x", "WORLD_SIZE=4"})));
  CHECK_FALSE(launcher_rank_from_environ(env({"RANK= 1", "WORLD_SIZE=4"})));
  CHECK_FALSE(launcher_rank_from_environ(env({"RANK=1", "WORLD_SIZE=99999999999"})));
  CHECK_FALSE(launcher_rank_from_environ(env({"XRANK=1", "WORLD_SIZE=4"})));
  CHECK_FALSE(launcher_rank_from_environ(std::string("RANK=1\0WORLD_SIZE", 17)));
  // getenv() returns the first definition; so does the parser.
  auto first = launcher_rank_from_environ(env({"RANK=1", "WORLD_SIZE=4", "RANK=2"}));
  REQUIRE(first);
  CHECK(first->rank == 1);
  // A job id with characters outside the safe set is dropped, the rank kept.
  auto bad_id = launcher_rank_from_environ(env({"RANK=1", "WORLD_SIZE=4", "TORCHELASTIC_RUN_ID=a b;rm"}));
  REQUIRE(bad_id);
  CHECK(bad_id->job_id.empty());
  CHECK_FALSE(launcher_rank_from_environ(""));
}

}  // namespace causeway::collector
