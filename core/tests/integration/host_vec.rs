//! [`HostVec`]: memory lent by a backend is filled, resized, moved to the heap past its
//! capacity, and returned exactly once; without a backend, or past its limit, the heap is used.

use crate::common;

use std::sync::{atomic::Ordering, Arc};

use bellows_core::{host_buffer::HostVec, Backend};
use common::lending::Lending;

#[test]
fn backend_memory_is_filled_resized_and_returned_once() {
    let lender = Arc::new(Lending::with_limit(1 << 20));
    let backend: Arc<dyn Backend> = lender.clone();
    let mut v: HostVec<u64> = HostVec::with_capacity_in(1000, Some(&backend));
    assert!(v.is_backend_memory());
    assert_eq!((v.len(), v.capacity()), (0, 1000));
    for (i, x) in v.spare_capacity_mut()[..10].iter_mut().enumerate() {
        x.write(i as u64 + 1);
    }
    // SAFETY: 10 values written above.
    unsafe { v.set_len(10) };
    v.resize_with_value(1000, 0);
    assert_eq!(v.len(), 1000);
    assert_eq!(&v[..11], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0]);
    assert!(v.iter().skip(10).all(|&x| x == 0));
    v[999] = 7;
    let copy = v.clone();
    assert!(!copy.is_backend_memory());
    assert_eq!(copy, v);
    assert_eq!(lender.lent.lock().unwrap().len(), 1);
    drop(v);
    assert_eq!(lender.frees.load(Ordering::SeqCst), 1);
    assert!(lender.lent.lock().unwrap().is_empty());
    // Past its capacity, the vector moves to the heap and returns the block at once.
    let mut w: HostVec<u64> = HostVec::with_capacity_in(4, Some(&backend));
    w.resize_with_value(4, 9);
    w.resize_with_value(6, 1);
    assert_eq!(&*w, &[9, 9, 9, 9, 1, 1]);
    assert!(!w.is_backend_memory());
    assert_eq!(lender.frees.load(Ordering::SeqCst), 2);
    let w = w.into_vec();
    assert_eq!(w.len(), 6);
    // Pushing fills the block, then moves to the heap.
    let mut p: HostVec<u64> = HostVec::with_capacity_in(2, Some(&backend));
    for x in 0..5 {
        p.push(x);
    }
    assert_eq!(&*p, &[0, 1, 2, 3, 4]);
    assert!(!p.is_backend_memory());
    assert_eq!(lender.frees.load(Ordering::SeqCst), 3);
}

#[test]
fn falls_back_to_the_heap() {
    let lender = Arc::new(Lending::with_limit(64));
    let backend: Arc<dyn Backend> = lender.clone();
    // Over the lender's limit: the heap.
    let v: HostVec<u64> = HostVec::with_capacity_in(100, Some(&backend));
    assert!(!v.is_backend_memory());
    assert_eq!(v.capacity(), 100);
    // No backend at all, and an empty request: the heap, nothing asked.
    assert!(!HostVec::<u64>::with_capacity_in(8, None).is_backend_memory());
    assert!(!HostVec::<u64>::with_capacity_in(0, Some(&backend)).is_backend_memory());
    assert!(lender.lent.lock().unwrap().is_empty());
    // A backend block copied out.
    let mut b: HostVec<u64> = HostVec::with_capacity_in(8, Some(&backend));
    assert!(b.is_backend_memory());
    b.resize_with_value(8, 3);
    assert_eq!(b.into_vec(), vec![3; 8]);
    assert_eq!(lender.frees.load(Ordering::SeqCst), 1);
}
