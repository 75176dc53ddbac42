! SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
! Fortran point-to-point test, built twice: with mpif.h (-DUSE_MPIFH,
! binary f_mpifh) and with `use mpi` (binary f_usempi). Needs >= 3 ranks.
! Checks data, statuses and request handles of: ordering per sender,
! wildcards, Probe/Iprobe/Mprobe/Mrecv/Improbe/Imrecv, persistent
! requests (Startall), derived types (vector, struct at MPI_BOTTOM),
! mixed request arrays (kprog requests with an Open MPI Ibarrier) through
! Waitall/Waitany/Testsome, MPI_STATUS(ES)_IGNORE, Sendrecv(_replace),
! and a duplicated communicator. Silent and exit 0 on success; ./run
! checks from the shim's counters that the traffic went through kprog.
#ifndef USE_MPIFH
module fcheck
  use mpi
  implicit none
contains
#include "f_check.inc"
end module fcheck
#endif

program f_p2p
#ifdef USE_MPIFH
  implicit none
  include 'mpif.h'
#else
  use mpi
  use fcheck
  implicit none
#endif
  integer, parameter :: nmsg = 40
  integer :: rank, nprocs, ierr, i, j, k, src, tag, cnt, dup, n
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 8)
  integer :: reqs(8), idx(8), msg, vtype, stype, bl(2), ty(2)
  integer(kind=MPI_ADDRESS_KIND) :: disp(2)
  integer :: seq(0:63), buf(64), rbuf(64)
  double precision :: a(5, 4), col(5)
  integer, volatile :: ia, ib   ! reached through MPI_BOTTOM only
  logical :: flag

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  call check(nprocs >= 3, 'needs 3 ranks', 1)

  ! 1. Ordering per sender, with ANY_SOURCE on the receiver.
  if (rank == 0) then
    seq = 0
    do i = 1, nmsg * (nprocs - 1)
      call MPI_RECV(buf, 2, MPI_INTEGER, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, st, ierr)
      src = st(MPI_SOURCE)
      call check(ierr == MPI_SUCCESS .and. st(MPI_TAG) == 7, 'ordering status', i)
      call check(buf(1) == src .and. buf(2) == seq(src), 'ordering: out of order', i)
      seq(src) = seq(src) + 1
    end do
  else
    do i = 0, nmsg - 1
      buf(1) = rank
      buf(2) = i
      if (mod(i, 2) == 0) then
        call MPI_SEND(buf, 2, MPI_INTEGER, 0, 7, MPI_COMM_WORLD, ierr)
      else
        call MPI_ISEND(buf, 2, MPI_INTEGER, 0, 7, MPI_COMM_WORLD, reqs(1), ierr)
        call check(reqs(1) /= MPI_REQUEST_NULL, 'isend request', i)
        call MPI_WAIT(reqs(1), MPI_STATUS_IGNORE, ierr)
        call check(reqs(1) == MPI_REQUEST_NULL, 'wait frees', i)
      end if
    end do
  end if

  ! 2. Wildcards: ANY_SOURCE and ANY_TAG, counts from the status.
  if (rank == 1) then
    do i = 1, 3
      call MPI_RECV(rbuf, 64, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
      call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
      src = st(MPI_SOURCE)
      tag = st(MPI_TAG)
      call check(tag == 100 + src .and. cnt == src + 1, 'wildcard status', i)
      call check(all(rbuf(1:cnt) == src), 'wildcard data', i)
    end do
  else if (rank == 0 .or. rank == 2) then
    buf = rank
    do i = 1, merge(2, 1, rank == 0)
      call MPI_SEND(buf, rank + 1, MPI_INTEGER, 1, 100 + rank, MPI_COMM_WORLD, ierr)
    end do
  end if

  ! 3. Probes: Probe + Get_count, Iprobe loop, Mprobe/Mrecv, Improbe/Imrecv.
  if (rank == 2) then
    call MPI_PROBE(0, 21, MPI_COMM_WORLD, st, ierr)
    call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
    call check(cnt == 5 .and. st(MPI_SOURCE) == 0, 'probe status', cnt)
    call MPI_RECV(rbuf, cnt, MPI_INTEGER, 0, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call check(all(rbuf(1:5) == 21), 'probe data', 0)
    flag = .false.
    do while (.not. flag)
      call MPI_IPROBE(MPI_ANY_SOURCE, 22, MPI_COMM_WORLD, flag, st, ierr)
    end do
    call check(st(MPI_SOURCE) == 0 .and. st(MPI_TAG) == 22, 'iprobe status', 0)
    call MPI_RECV(rbuf, 64, MPI_INTEGER, 0, 22, MPI_COMM_WORLD, st, ierr)
    call MPI_MPROBE(0, 23, MPI_COMM_WORLD, msg, st, ierr)
    call check(msg /= MPI_MESSAGE_NULL, 'mprobe message', 0)
    call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
    call check(cnt == 3, 'mprobe count', cnt)
    call MPI_MRECV(rbuf, cnt, MPI_INTEGER, msg, st, ierr)
    call check(msg == MPI_MESSAGE_NULL .and. all(rbuf(1:3) == 23), 'mrecv', 0)
    flag = .false.
    do while (.not. flag)
      call MPI_IMPROBE(0, 24, MPI_COMM_WORLD, flag, msg, st, ierr)
    end do
    call MPI_IMRECV(rbuf, 64, MPI_INTEGER, msg, reqs(1), ierr)
    call check(msg == MPI_MESSAGE_NULL, 'imrecv message', 0)
    call MPI_WAIT(reqs(1), st, ierr)
    call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
    call check(cnt == 4 .and. all(rbuf(1:4) == 24) .and. st(MPI_TAG) == 24, 'imrecv', cnt)
    ! PROC_NULL: a probe finds it at once
    call MPI_MPROBE(MPI_PROC_NULL, 0, MPI_COMM_WORLD, msg, st, ierr)
    call check(msg == MPI_MESSAGE_NO_PROC .and. st(MPI_SOURCE) == MPI_PROC_NULL, 'no_proc', 0)
    call MPI_MRECV(rbuf, 1, MPI_INTEGER, msg, st, ierr)
  else if (rank == 0) then
    buf = 21
    call MPI_SEND(buf, 5, MPI_INTEGER, 2, 21, MPI_COMM_WORLD, ierr)
    buf = 22
    call MPI_SEND(buf, 1, MPI_INTEGER, 2, 22, MPI_COMM_WORLD, ierr)
    buf = 23
    call MPI_SEND(buf, 3, MPI_INTEGER, 2, 23, MPI_COMM_WORLD, ierr)
    buf = 24
    call MPI_SSEND(buf, 4, MPI_INTEGER, 2, 24, MPI_COMM_WORLD, ierr)
  end if

  ! 4. Persistent requests: a ring, Startall + Waitall, several rounds.
  src = mod(rank + nprocs - 1, nprocs)
  j = mod(rank + 1, nprocs)
  call MPI_RECV_INIT(rbuf, 8, MPI_INTEGER, src, 31, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_SEND_INIT(buf, 8, MPI_INTEGER, j, 31, MPI_COMM_WORLD, reqs(2), ierr)
  do k = 1, 5
    buf(1:8) = rank * 1000 + k
    call MPI_STARTALL(2, reqs, ierr)
    call MPI_WAITALL(2, reqs, sts, ierr)
    call check(reqs(1) /= MPI_REQUEST_NULL .and. reqs(2) /= MPI_REQUEST_NULL, &
               'persistent handles stay', k)
    call check(sts(MPI_SOURCE, 1) == src .and. all(rbuf(1:8) == src * 1000 + k), &
               'persistent data', k)
  end do
  call MPI_REQUEST_FREE(reqs(1), ierr)
  call MPI_REQUEST_FREE(reqs(2), ierr)
  call check(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'request_free', 0)

  ! 5. Derived types: a row of a column-major matrix (vector), and a
  !    struct of two absolute addresses sent from MPI_BOTTOM.
  call MPI_TYPE_VECTOR(4, 1, 5, MPI_DOUBLE_PRECISION, vtype, ierr)
  call MPI_TYPE_COMMIT(vtype, ierr)
  call MPI_GET_ADDRESS(ia, disp(1), ierr)
  call MPI_GET_ADDRESS(ib, disp(2), ierr)
  bl = 1
  ty = MPI_INTEGER
  call MPI_TYPE_CREATE_STRUCT(2, bl, disp, ty, stype, ierr)
  call MPI_TYPE_COMMIT(stype, ierr)
  if (rank == 0) then
    do j = 1, 4
      do i = 1, 5
        a(i, j) = i * 10 + j
      end do
    end do
    call MPI_SEND(a(3, 1), 1, vtype, 1, 41, MPI_COMM_WORLD, ierr)
    ia = 4711
    ib = -17
    call MPI_SEND(MPI_BOTTOM, 1, stype, 1, 42, MPI_COMM_WORLD, ierr)
  else if (rank == 1) then
    col = -1
    call MPI_RECV(col, 4, MPI_DOUBLE_PRECISION, 0, 41, MPI_COMM_WORLD, st, ierr)
    do j = 1, 4
      call check(col(j) == 30 + j, 'vector data', j)
    end do
    ia = 0
    ib = 0
    call MPI_RECV(MPI_BOTTOM, 1, stype, 0, 42, MPI_COMM_WORLD, st, ierr)
    call check(ia == 4711 .and. ib == -17, 'struct at MPI_BOTTOM', ia)
  end if
  call MPI_TYPE_FREE(vtype, ierr)
  call MPI_TYPE_FREE(stype, ierr)

  ! 6. Mixed arrays: kprog requests with an Open MPI request (Ibarrier).
  src = mod(rank + nprocs - 1, nprocs)
  j = mod(rank + 1, nprocs)
  buf(1) = rank
  call MPI_IRECV(rbuf, 1, MPI_INTEGER, src, 51, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IBARRIER(MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_ISEND(buf, 1, MPI_INTEGER, j, 51, MPI_COMM_WORLD, reqs(3), ierr)
  reqs(4) = MPI_REQUEST_NULL
  call MPI_WAITALL(4, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(all(reqs(1:4) == MPI_REQUEST_NULL) .and. rbuf(1) == src, 'mixed waitall', 0)
  call MPI_IBARRIER(MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_IRECV(rbuf, 1, MPI_INTEGER, src, 52, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_ISEND(buf, 1, MPI_INTEGER, j, 52, MPI_COMM_WORLD, reqs(3), ierr)
  n = 0
  do while (n < 3)
    call MPI_WAITANY(3, reqs, i, st, ierr)
    call check(i >= 1 .and. i <= 3, 'waitany index', i)
    call check(reqs(i) == MPI_REQUEST_NULL, 'waitany frees', i)
    if (i == 2) call check(st(MPI_SOURCE) == src .and. st(MPI_TAG) == 52, 'waitany status', i)
    n = n + 1
  end do
  call MPI_WAITANY(3, reqs, i, st, ierr)
  call check(i == MPI_UNDEFINED, 'waitany on nulls', i)
  call MPI_IRECV(rbuf, 1, MPI_INTEGER, src, 53, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_ISEND(buf, 1, MPI_INTEGER, j, 53, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_IBARRIER(MPI_COMM_WORLD, reqs(3), ierr)
  n = 0
  do while (n < 3)
    call MPI_TESTSOME(3, reqs, k, idx, sts, ierr)
    do i = 1, k
      call check(idx(i) >= 1 .and. idx(i) <= 3, 'testsome index', idx(i))
      if (idx(i) == 1) call check(sts(MPI_SOURCE, i) == src .and. rbuf(1) == src, &
                                  'testsome status', i)
    end do
    n = n + k
  end do
  call check(all(reqs(1:3) == MPI_REQUEST_NULL), 'testsome frees', 0)

  ! 7. Sendrecv, Sendrecv_replace and Test on a duplicated communicator.
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  buf(1:3) = rank
  call MPI_SENDRECV(buf, 3, MPI_INTEGER, j, 61, rbuf, 3, MPI_INTEGER, src, 61, dup, st, ierr)
  call check(all(rbuf(1:3) == src) .and. st(MPI_SOURCE) == src, 'sendrecv', 0)
  buf(1:2) = rank
  call MPI_SENDRECV_REPLACE(buf, 2, MPI_INTEGER, j, 62, src, 62, dup, st, ierr)
  call check(all(buf(1:2) == src), 'sendrecv_replace', 0)
  call MPI_IRECV(rbuf, 1, MPI_INTEGER, src, 63, dup, reqs(1), ierr)
  buf(1) = rank + 100
  call MPI_SEND(buf, 1, MPI_INTEGER, j, 63, dup, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_TEST(reqs(1), flag, st, ierr)
  end do
  call check(reqs(1) == MPI_REQUEST_NULL .and. rbuf(1) == src + 100, 'test on dup', 0)
  call MPI_COMM_FREE(dup, ierr)

  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FINALIZE(ierr)

#ifdef USE_MPIFH
contains
#include "f_check.inc"
#endif
end program f_p2p
