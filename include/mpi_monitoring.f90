! SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
! MPI_Monitoring: the Fortran interface of the monitoring sessions (seed
! 002, section 4.3), served by libkprog.so. Every routine takes one more
! argument, the return value; a session id is an INTEGER; counts and
! sizes are INTEGER(KIND=8) arrays. Build the module with the compiler of
! the program (libshim's `make` does, with mpifort, into libshim/):
!   mpifort -Ilibshim app.f90 -Llibshim -lkprog
module MPI_Monitoring
  use, intrinsic :: iso_c_binding, only: c_int, c_int64_t
  implicit none
  integer, parameter :: MPI_M_ALL_MSID = -1
  integer, parameter :: MPI_M_P2P_ONLY = 1, MPI_M_COLL_ONLY = 2, MPI_M_OSC_ONLY = 4
  integer, parameter :: MPI_M_ALL_COMM = 7
  integer, parameter :: MPI_M_INTERNAL_FAIL = -101, MPI_M_MPIT_FAIL = -102
  integer, parameter :: MPI_M_MISSING_INIT = -103, MPI_M_SESSION_STILL_ACTIVE = -104
  integer, parameter :: MPI_M_SESSION_NOT_SUSPENDED = -105, MPI_M_INVALID_MSID = -106
  integer, parameter :: MPI_M_SESSION_OVERFLOW = -107, MPI_M_MULTIPLE_CALL = -108
  integer, parameter :: MPI_M_INVALID_ROOT = -109
  integer, parameter :: MPI_M_MAX_SESSIONS = 256
  ! pass these where an output is not wanted (recognised by address)
  integer(c_int64_t), bind(C, name='kp_mpi_m_data_ignore') :: MPI_M_DATA_IGNORE(1)
  integer(c_int), bind(C, name='kp_mpi_m_int_ignore') :: MPI_M_INT_IGNORE(1)
end module MPI_Monitoring
