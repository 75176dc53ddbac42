! SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
! The Fortran interface of the monitoring sessions: rank i sends i+1
! messages of 8*(i+1) bytes to rank i+1 (mod size) inside a session,
! more outside it; get_data, allgather_data and the error codes must
! agree. The messages are sent in C (monitoring_f_c.c): Open MPI's Fortran
! bindings call PMPI_ directly and bypass the shim. Any number of ranks
! >= 2. Prints nothing on success.
program monitoring_f
  use mpi
  use MPI_Monitoring
  implicit none
  integer :: ierr, rc, rank, nprocs, msid, i, n, nxt, asz
  integer(kind=8), allocatable :: cnt(:), siz(:), mat(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  nxt = mod(rank + 1, nprocs)
  allocate(cnt(nprocs), siz(nprocs), mat(nprocs * nprocs))

  call MPI_M_suspend(0, rc)
  call expect(rc == MPI_M_MISSING_INIT, 'suspend before init')
  call MPI_M_init(rc)
  call expect(rc == MPI_SUCCESS, 'init')
  call MPI_M_start(MPI_COMM_WORLD, msid, rc)
  call expect(rc == MPI_SUCCESS, 'start')
  call ring_traffic(7)
  call MPI_M_get_data(msid, cnt, siz, MPI_M_P2P_ONLY, rc)
  call expect(rc == MPI_M_SESSION_NOT_SUSPENDED, 'data of an active session')
  call MPI_M_suspend(msid, rc)
  call expect(rc == MPI_SUCCESS, 'suspend')
  ! not counted: the session is suspended
  call ring_traffic(8)

  call MPI_M_get_info(msid, MPI_M_INT_IGNORE, asz, rc)
  call expect(rc == MPI_SUCCESS .and. asz == nprocs, 'get_info')
  call MPI_M_get_data(msid, cnt, siz, MPI_M_P2P_ONLY, rc)
  call expect(rc == MPI_SUCCESS, 'get_data')
  do i = 1, nprocs
    if (i - 1 == nxt) then
      call expect(cnt(i) == rank + 1 .and. siz(i) == 8 * (rank + 1) * (rank + 1), 'to next')
    else
      call expect(cnt(i) == 0 .and. siz(i) == 0, 'to others')
    end if
  end do
  call MPI_M_get_data(msid, MPI_M_DATA_IGNORE, siz, MPI_M_P2P_ONLY, rc)
  call expect(rc == MPI_SUCCESS, 'get_data with an ignored output')
  call MPI_M_allgather_data(msid, mat, MPI_M_DATA_IGNORE, MPI_M_P2P_ONLY, rc)
  call expect(rc == MPI_SUCCESS, 'allgather')
  do n = 0, nprocs - 1
    ! row n (C order: sender n) holds n+1 at column n+1 mod size
    call expect(mat(n * nprocs + mod(n + 1, nprocs) + 1) == n + 1, 'matrix')
  end do
  call MPI_M_rootgather_data(msid, nprocs, mat, mat, MPI_M_P2P_ONLY, rc)
  call expect(rc == MPI_M_INVALID_ROOT, 'bad root')
  call MPI_M_free(msid, rc)
  call expect(rc == MPI_SUCCESS, 'free')
  call MPI_M_free(msid, rc)
  call expect(rc == MPI_M_INVALID_MSID, 'free twice')
  call MPI_M_finalize(rc)
  call expect(rc == MPI_SUCCESS, 'finalize')
  call MPI_Finalize(ierr)

contains
  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: e
    if (.not. ok) then
      print '(a,i0,a,a)', 'FAIL monitoring_f: rank ', rank, ': ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end if
  end subroutine expect
end program monitoring_f
