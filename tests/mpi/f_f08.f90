! SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
! The point-to-point checks of f_p2p.F90 through `use mpi_f08` (handles
! as derived types, ierror optional and mostly omitted). Needs >= 3 ranks.
! Silent and exit 0 on success.
program f_f08
  use mpi_f08
  implicit none
  integer, parameter :: nmsg = 40
  integer :: rank, nprocs, ierr, i, j, k, src, tag, cnt, n
  type(MPI_Status) :: st, sts(8)
  type(MPI_Request) :: reqs(8)
  type(MPI_Message) :: msg
  type(MPI_Datatype) :: vtype
  type(MPI_Comm) :: dup
  integer :: idx(8), seq(0:63), buf(64), rbuf(64)
  double precision :: a(5, 4), col(5)
  logical :: flag

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call check(nprocs >= 3, 'needs 3 ranks', 1)

  ! 1. Ordering per sender with ANY_SOURCE.
  if (rank == 0) then
    seq = 0
    do i = 1, nmsg * (nprocs - 1)
      call MPI_Recv(buf, 2, MPI_INTEGER, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, st, ierr)
      src = st%MPI_SOURCE
      call check(ierr == MPI_SUCCESS .and. st%MPI_TAG == 7, 'ordering status', i)
      call check(buf(1) == src .and. buf(2) == seq(src), 'ordering: out of order', i)
      seq(src) = seq(src) + 1
    end do
  else
    do i = 0, nmsg - 1
      buf(1) = rank
      buf(2) = i
      if (mod(i, 2) == 0) then
        call MPI_Send(buf, 2, MPI_INTEGER, 0, 7, MPI_COMM_WORLD)
      else
        call MPI_Isend(buf, 2, MPI_INTEGER, 0, 7, MPI_COMM_WORLD, reqs(1))
        call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
        call check(reqs(1) == MPI_REQUEST_NULL, 'wait frees', i)
      end if
    end do
  end if

  ! 2. Wildcards.
  if (rank == 1) then
    do i = 1, 2
      call MPI_Recv(rbuf, 64, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st)
      call MPI_Get_count(st, MPI_INTEGER, cnt)
      src = st%MPI_SOURCE
      tag = st%MPI_TAG
      call check(tag == 100 + src .and. cnt == src + 1 .and. all(rbuf(1:cnt) == src), &
                 'wildcard', i)
    end do
  else if (rank == 0 .or. rank == 2) then
    buf = rank
    call MPI_Send(buf, rank + 1, MPI_INTEGER, 1, 100 + rank, MPI_COMM_WORLD)
  end if

  ! 3. Probes.
  if (rank == 2) then
    call MPI_Probe(0, 21, MPI_COMM_WORLD, st)
    call MPI_Get_count(st, MPI_INTEGER, cnt)
    call check(cnt == 5 .and. st%MPI_SOURCE == 0, 'probe status', cnt)
    call MPI_Recv(rbuf, cnt, MPI_INTEGER, 0, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    flag = .false.
    do while (.not. flag)
      call MPI_Iprobe(MPI_ANY_SOURCE, 22, MPI_COMM_WORLD, flag, st)
    end do
    call check(st%MPI_SOURCE == 0 .and. st%MPI_TAG == 22, 'iprobe status', 0)
    call MPI_Recv(rbuf, 64, MPI_INTEGER, 0, 22, MPI_COMM_WORLD, st)
    call MPI_Mprobe(0, 23, MPI_COMM_WORLD, msg, st)
    call MPI_Get_count(st, MPI_INTEGER, cnt)
    call check(cnt == 3, 'mprobe count', cnt)
    call MPI_Mrecv(rbuf, cnt, MPI_INTEGER, msg, st)
    call check(msg == MPI_MESSAGE_NULL .and. all(rbuf(1:3) == 23), 'mrecv', 0)
    flag = .false.
    do while (.not. flag)
      call MPI_Improbe(0, 24, MPI_COMM_WORLD, flag, msg, st)
    end do
    call MPI_Imrecv(rbuf, 64, MPI_INTEGER, msg, reqs(1))
    call MPI_Wait(reqs(1), st)
    call MPI_Get_count(st, MPI_INTEGER, cnt)
    call check(cnt == 4 .and. all(rbuf(1:4) == 24), 'imrecv', cnt)
  else if (rank == 0) then
    buf = 21
    call MPI_Send(buf, 5, MPI_INTEGER, 2, 21, MPI_COMM_WORLD)
    buf = 22
    call MPI_Send(buf, 1, MPI_INTEGER, 2, 22, MPI_COMM_WORLD)
    buf = 23
    call MPI_Send(buf, 3, MPI_INTEGER, 2, 23, MPI_COMM_WORLD)
    buf = 24
    call MPI_Ssend(buf, 4, MPI_INTEGER, 2, 24, MPI_COMM_WORLD)
  end if

  ! 4. Persistent requests in a ring.
  src = mod(rank + nprocs - 1, nprocs)
  j = mod(rank + 1, nprocs)
  call MPI_Recv_init(rbuf, 8, MPI_INTEGER, src, 31, MPI_COMM_WORLD, reqs(1))
  call MPI_Send_init(buf, 8, MPI_INTEGER, j, 31, MPI_COMM_WORLD, reqs(2))
  do k = 1, 5
    buf(1:8) = rank * 1000 + k
    call MPI_Startall(2, reqs)
    call MPI_Waitall(2, reqs, sts)
    call check(sts(1)%MPI_SOURCE == src .and. all(rbuf(1:8) == src * 1000 + k), &
               'persistent data', k)
  end do
  call MPI_Request_free(reqs(1))
  call MPI_Request_free(reqs(2))
  call check(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'request_free', 0)

  ! 5. A derived type: a row of a column-major matrix.
  call MPI_Type_vector(4, 1, 5, MPI_DOUBLE_PRECISION, vtype)
  call MPI_Type_commit(vtype)
  if (rank == 0) then
    do j = 1, 4
      do i = 1, 5
        a(i, j) = i * 10 + j
      end do
    end do
    call MPI_Send(a(3, 1), 1, vtype, 1, 41, MPI_COMM_WORLD)
  else if (rank == 1) then
    col = -1
    call MPI_Recv(col, 4, MPI_DOUBLE_PRECISION, 0, 41, MPI_COMM_WORLD, st)
    do j = 1, 4
      call check(col(j) == 30 + j, 'vector data', j)
    end do
  end if
  call MPI_Type_free(vtype)

  ! 6. Mixed arrays with an Open MPI Ibarrier.
  src = mod(rank + nprocs - 1, nprocs)
  j = mod(rank + 1, nprocs)
  buf(1) = rank
  call MPI_Irecv(rbuf, 1, MPI_INTEGER, src, 51, MPI_COMM_WORLD, reqs(1))
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(2))
  call MPI_Isend(buf, 1, MPI_INTEGER, j, 51, MPI_COMM_WORLD, reqs(3))
  call MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE)
  call check(rbuf(1) == src .and. reqs(1) == MPI_REQUEST_NULL .and. &
             reqs(2) == MPI_REQUEST_NULL .and. reqs(3) == MPI_REQUEST_NULL, 'mixed waitall', 0)
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(1))
  call MPI_Irecv(rbuf, 1, MPI_INTEGER, src, 52, MPI_COMM_WORLD, reqs(2))
  call MPI_Isend(buf, 1, MPI_INTEGER, j, 52, MPI_COMM_WORLD, reqs(3))
  do n = 1, 3
    call MPI_Waitany(3, reqs, i, st)
    call check(i >= 1 .and. i <= 3, 'waitany index', i)
    if (i == 2) call check(st%MPI_SOURCE == src .and. st%MPI_TAG == 52, 'waitany status', i)
  end do
  call MPI_Irecv(rbuf, 1, MPI_INTEGER, src, 53, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(buf, 1, MPI_INTEGER, j, 53, MPI_COMM_WORLD, reqs(2))
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(3))
  n = 0
  do while (n < 3)
    call MPI_Testsome(3, reqs, k, idx, sts)
    do i = 1, k
      if (idx(i) == 1) call check(sts(i)%MPI_SOURCE == src .and. rbuf(1) == src, &
                                  'testsome status', i)
    end do
    n = n + k
  end do

  ! 7. Sendrecv and Test on a duplicated communicator.
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  buf(1:3) = rank
  call MPI_Sendrecv(buf, 3, MPI_INTEGER, j, 61, rbuf, 3, MPI_INTEGER, src, 61, dup, st)
  call check(all(rbuf(1:3) == src) .and. st%MPI_SOURCE == src, 'sendrecv', 0)
  call MPI_Irecv(rbuf, 1, MPI_INTEGER, src, 63, dup, reqs(1))
  buf(1) = rank + 100
  call MPI_Send(buf, 1, MPI_INTEGER, j, 63, dup)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(reqs(1), flag, st)
  end do
  call check(rbuf(1) == src + 100, 'test on dup', 0)
  call MPI_Comm_free(dup)

  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Finalize()

contains

  subroutine check(cond, what, n)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    integer, intent(in) :: n
    integer :: r

    if (cond) return
    call MPI_Comm_rank(MPI_COMM_WORLD, r)
    write (0, '(a,i0,a,a,a,i0)') 'FAIL rank ', r, ': ', what, ': ', n
    flush (0)
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine check
end program f_f08
