window.addEventListener('error',function(e){document.documentElement.setAttribute('data-error',String(e.message||e))});
